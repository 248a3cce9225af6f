/** Test helpers for prazo users: drive time and randomness deterministically in your own tests. */
export { FakeClock, type FakeClockOptions } from '../clock/fake.js';
export { seededRandom } from './random.js';
