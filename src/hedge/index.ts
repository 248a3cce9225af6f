export { HEDGE_DEFAULTS, HEDGE_LIMITS } from './constants.js';
export { createHedgePolicy, type HedgeOptions, type HedgePolicy } from './policy.js';
