export { type Clock, clampDelay, MAX_TIMER_DELAY_MS, sleep, type Timer, type TimerOptions } from './clock.js';
export { systemClock } from './system.js';
