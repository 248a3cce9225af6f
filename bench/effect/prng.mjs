/** mulberry32, the same seeded PRNG prazo/testing ships: every simulated incident replays exactly. */
export { seededRandom as mulberry32 } from '../../dist/testing/index.js';
