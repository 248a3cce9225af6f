/** Test helpers for prazo users: drive time deterministically in your own tests. */
export { FakeClock, type FakeClockOptions } from '../clock/fake.js';
