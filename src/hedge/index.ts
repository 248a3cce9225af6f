export { HEDGE_OPTIONS } from './options.js';
export { createHedgePolicy, type HedgeOptions, type HedgePolicy } from './policy.js';
