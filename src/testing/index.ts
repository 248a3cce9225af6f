/**
 * `prazo/testing`: drive time and randomness deterministically in your own tests. Every prazo
 * component takes a `clock` (and, where it draws randomness, a `random`): pass a `FakeClock` and a
 * `seededRandom` and a run replays exactly. `Timer` and `TimerOptions` complete the root's `Clock`
 * type for code that implements one.
 *
 * @module prazo/testing
 */
export type { Timer, TimerOptions } from '../clock/clock.js';
export { FAKE_CLOCK_OPTIONS, FakeClock, type FakeClockOptions } from '../clock/fake.js';
export { seededRandom } from './random.js';
