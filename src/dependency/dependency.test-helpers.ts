import type { FakeClock } from '../clock/fake.js';
import type { AttemptContext } from './types.js';

/** Seeded PRNG (mulberry32) for tests, shared with `prazo/testing`. */
export { seededRandom as mulberry32 } from '../testing/random.js';

/**
 * A fake remote call on the fake clock: settles after `ms` with `outcome` (a value, or a thrown
 * error), and honours its attempt's signal like a real client (abort → reject with the reason).
 */
export function fakeCall<T>(clock: FakeClock, ctx: AttemptContext, ms: number, outcome: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const { signal } = ctx;
    const onAbort = (): void => {
      clock.clearTimer(timer);
      reject(signal.reason);
    };
    const timer = clock.setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      try {
        resolve(outcome());
      } catch (error) {
        reject(error);
      }
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export const coded = (code: string): Error => Object.assign(new Error(code), { code });

/** Nearest-rank quantile of a list of numbers. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface DriveResult {
  /** Caller-side latency of each call (ms), in start order, with its start time. */
  readonly calls: {
    readonly startedAt: number;
    readonly latencyMs: number;
    readonly ok: boolean;
    readonly value?: unknown;
  }[];
}

/**
 * Open-loop load on the fake clock: starts one call every `1000 / rps` ms for `seconds`, whatever the
 * earlier calls are doing (like real users), then lets every call finish.
 */
export async function drive(
  clock: FakeClock,
  rps: number,
  seconds: number,
  call: () => Promise<unknown>,
): Promise<DriveResult> {
  const interval = 1000 / rps;
  const calls: DriveResult['calls'][number][] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < rps * seconds; i += 1) {
    const startedAt = clock.now();
    pending.push(
      call().then(
        (value) => void calls.push({ startedAt, latencyMs: clock.now() - startedAt, ok: true, value }),
        () => void calls.push({ startedAt, latencyMs: clock.now() - startedAt, ok: false }),
      ),
    );
    await clock.advanceAsync(interval);
  }
  await clock.runAllAsync();
  await Promise.all(pending);
  return { calls };
}
