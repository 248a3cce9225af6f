export { createHedgePolicy, type HedgeOptions, type HedgePolicy } from './policy.js';
