import type { InterceptorOptions, NextCall, StatusObject } from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createDependency } from '../dependency/dependency.js';
import type { PrazoError } from '../errors/base.js';
import { isDeadlineInsufficient } from '../errors/guards.js';
import { deadlineInterceptor } from '../grpc/client.js';
import { prazoErrorOf } from '../grpc/status.js';
import type { MysqlTarget } from '../mysql/driver.js';
import { mysqlQuery } from '../mysql/query.js';
import { queryWithDeadline } from '../pg/query.js';
import type { PgClient } from '../pg/types.js';
import { type RedisConnection, redisDeadlineClient } from '../redis/client.js';
import type { FailureVerdict } from '../retry/classify.js';
import { planRetry } from '../retry/planner.js';
import { callWithDeadline } from './call.js';
import { Deadline } from './deadline.js';
import { fitsDeadline, insufficientError, MIN_ATTEMPT_MS, neededMs, refusalOf } from './fits.js';
import { checkFits } from './store.js';

const EPOCH = 1_700_000_000_000;
const NAME = 'inventory';

describe('fitsDeadline (SPEC D4, the one rule)', () => {
  it('starts an attempt with at least the p99 left, and at least 1 ms', () => {
    expect(fitsDeadline(180, 180)).toBe(true);
    expect(fitsDeadline(179.999, 180)).toBe(false);
    expect(fitsDeadline(1, 0)).toBe(true);
    expect(fitsDeadline(0.5, 0)).toBe(false);
    expect(fitsDeadline(0, 0)).toBe(false);
    expect(fitsDeadline(-3, 0)).toBe(false);
    expect(fitsDeadline(Number.NaN, 10)).toBe(false);
    expect(fitsDeadline(Number.POSITIVE_INFINITY, 10)).toBe(true);
    expect(neededMs(0.2)).toBe(MIN_ATTEMPT_MS);
    expect(neededMs(80)).toBe(80);
  });

  it('refuses with a DeadlineInsufficientError carrying the time left and the p99', () => {
    expect(refusalOf({ name: NAME, p99Ms: 80 }, 80)).toBeUndefined();
    const error = refusalOf({ name: NAME, p99Ms: 80 }, 79.5, 2)!;
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(error).toMatchObject({ dependency: NAME, remainingMs: 79.5, neededMs: 80, attempt: 2 });
    expect(error.message).toBe(
      'deadline insufficient for inventory (attempt 2): 79 ms left, needs 80 ms (p99); not called',
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// One verdict through every integration: the same time left and p99 give the same answer, and the same
// error, whichever door the call goes through. A new copy of the rule that drifts fails here.

/** What an integration did: refused (with its error) or went on to send (touched its transport). */
type Verdict = { readonly sent: true } | { readonly sent: false; readonly error: PrazoError };

const SENT = new Error('sent: the integration went past the D4 check');

/** Runs `attempt`, telling a D4 refusal from "it went on": the transport stand-ins throw {@link SENT}. */
async function verdictOf(attempt: () => Promise<unknown>, touched: () => boolean): Promise<Verdict> {
  try {
    await attempt();
  } catch (error) {
    const prazo = prazoErrorOf(error);
    if (prazo !== undefined && isDeadlineInsufficient(prazo)) {
      expect(touched(), 'refused, yet the transport was touched').toBe(false);
      return { sent: false, error: prazo };
    }
    if (error !== SENT) throw error;
  }
  expect(touched(), 'went on, yet never touched the transport').toBe(true);
  return { sent: true };
}

/** A transport that records being touched and fails at once: whatever is asked of it. */
function standIn<T extends object>(
  extra: Record<string, unknown> = {},
): { target: T; touched: () => boolean } {
  let touched = false;
  const target = new Proxy(extra, {
    get(own, key) {
      if (key in own) return own[key as string];
      if (typeof key === 'symbol' || key === 'then') return undefined;
      touched = true;
      return () => {
        throw SENT;
      };
    },
  });
  return { target: target as T, touched: () => touched };
}

const EXECUTOR = 'the executor (createDependency().execute)';

type Door = (remainingMs: number, p99Ms: number) => Promise<Verdict>;

const deadlineIn = (remainingMs: number): { clock: FakeClock; deadline: Deadline } => {
  const clock = new FakeClock({ epoch: EPOCH });
  return { clock, deadline: Deadline.after(remainingMs, { clock }) };
};

const DOORS: Record<string, Door> = {
  [EXECUTOR]: async (remainingMs, p99Ms) => {
    const { clock, deadline } = deadlineIn(remainingMs);
    const dependency = createDependency({ name: NAME, p99Ms, clock });
    let called = false;
    return verdictOf(
      () =>
        dependency.execute(
          async () => {
            called = true;
            throw SENT;
          },
          { idempotent: false, deadline },
        ),
      () => called,
    );
  },
  "the planner's retry (planRetry)": async (remainingMs, p99Ms) => {
    const decision = planRetry({
      verdict: { retryable: true, immediate: true, kind: 'connect' } as FailureVerdict,
      idempotent: true,
      attemptsMade: 1,
      maxAttempts: 3,
      remainingMs,
      p99Ms,
      backoff: { baseMs: 10, capMs: 100 },
      random: () => 0,
    });
    if (decision.action === 'retry') return { sent: true };
    expect(decision).toEqual({ action: 'stop', reason: 'deadline-insufficient' });
    return { sent: false, error: insufficientError({ name: NAME, p99Ms }, remainingMs) };
  },
  callWithDeadline: async (remainingMs, p99Ms) => {
    const { deadline } = deadlineIn(remainingMs);
    let called = false;
    return verdictOf(
      () =>
        callWithDeadline(deadline, {
          name: NAME,
          p99Ms,
          execute: async () => {
            called = true;
            throw SENT;
          },
        }),
      () => called,
    );
  },
  'the stores (deadline/store.ts checkFits)': async (remainingMs, p99Ms) => {
    const { deadline } = deadlineIn(remainingMs);
    let sent = false;
    return verdictOf(
      async () => {
        checkFits(deadline, { name: NAME, p99Ms });
        sent = true;
        throw SENT;
      },
      () => sent,
    );
  },
  'prazo/pg (queryWithDeadline)': async (remainingMs, p99Ms) => {
    const { clock, deadline } = deadlineIn(remainingMs);
    const client = standIn<PgClient>();
    return verdictOf(
      () => queryWithDeadline(client.target, 'SELECT 1', [], { deadline, p99Ms, name: NAME, clock }),
      client.touched,
    );
  },
  'prazo/mysql (mysqlQuery)': async (remainingMs, p99Ms) => {
    const { clock, deadline } = deadlineIn(remainingMs);
    const target = standIn<MysqlTarget>();
    return verdictOf(
      () => mysqlQuery(target.target, 'SELECT 1', undefined, { deadline, p99Ms, name: NAME, clock }),
      target.touched,
    );
  },
  'prazo/redis (redisDeadlineClient)': async (remainingMs, p99Ms) => {
    const { deadline } = deadlineIn(remainingMs);
    let sent = false;
    const connection = {
      status: 'ready',
      duplicate: () => connection,
      call: () => {
        sent = true;
        throw SENT;
      },
    };
    const redis = redisDeadlineClient(connection as unknown as RedisConnection, { name: NAME, p99Ms });
    try {
      return await verdictOf(
        () => redis.command('GET', ['k'], { deadline }),
        () => sent,
      );
    } finally {
      await redis.close();
    }
  },
  'prazo/grpc (deadlineInterceptor)': async (remainingMs, p99Ms) => {
    const clock = new FakeClock({ epoch: EPOCH });
    let sent = false;
    const nextCall = (() => {
      sent = true;
      throw SENT;
    }) as unknown as NextCall;
    const callOptions = {
      method_definition: { path: '/prazo.test.Echo/Say' },
      deadline: EPOCH + remainingMs,
    } as unknown as InterceptorOptions;
    return verdictOf(
      async () => {
        const call = deadlineInterceptor({ name: NAME, p99Ms, clock })(callOptions, nextCall);
        const status = await new Promise<StatusObject>((resolve) =>
          call.start(new Metadata(), { onReceiveStatus: resolve }),
        );
        throw status;
      },
      () => sent,
    );
  },
};

/** The expected verdict, from the one rule. */
const expected = (remainingMs: number, p99Ms: number): Verdict => {
  const error = refusalOf({ name: NAME, p99Ms }, remainingMs);
  return error === undefined ? { sent: true } : { sent: false, error };
};

/** What two refusals must share: the code, the numbers, the words. */
const numbersOf = (v: Verdict) =>
  v.sent
    ? 'sent'
    : {
        code: v.error.code,
        message: v.error.message,
        dependency: (v.error as { dependency?: string }).dependency,
        remainingMs: (v.error as { remainingMs?: number }).remainingMs,
        neededMs: (v.error as { neededMs?: number }).neededMs,
      };

/** Quarters of a ms, often within 2 ms of 0 (where a floor of 1 ms can drift), else up to `max`. */
const near = (max: number) => fc.oneof(fc.integer({ min: -8, max: 8 }), fc.integer({ min: -40, max: max }));

/** Time left in quarters of a ms: exact as an epoch instant too (the gRPC door reads epoch ms). */
const quarters = (n: number): number => n / 4;

describe('one D4 verdict through every integration (SPEC D4, issue 25)', () => {
  // The boundaries: below, at and above the p99; a p99 under the 1 ms floor; nothing left.
  const EDGES: ReadonlyArray<readonly [number, number]> = [
    [80, 80],
    [79.75, 80],
    [80.25, 80],
    [0.5, 0], // a store's default p99 0 with half a ms left: refused (the executor's floor)
    [0.75, 0.5],
    [1, 0],
    [1, 0.5],
    [0, 0],
    [-5, 0],
    [-5, 30],
    [200, 30],
  ];

  for (const [door, run] of Object.entries(DOORS)) {
    it(`${door}: the same verdict and error at the boundaries`, async () => {
      for (const [remainingMs, p99Ms] of EDGES) {
        // The executor's p99 is above 0 by declaration: a dependency measured at 0 does not exist.
        if (door === EXECUTOR && p99Ms === 0) continue;
        const got = await run(remainingMs, p99Ms);
        const want = expected(remainingMs, p99Ms);
        expect(numbersOf(got), `${door}: ${remainingMs} ms left, p99 ${p99Ms}`).toEqual(numbersOf(want));
      }
    });
  }

  it('agrees on random times left and p99s, door by door (property)', async () => {
    await fc.assert(
      fc.asyncProperty(near(1_200), near(1_000), async (q, p) => {
        const remainingMs = quarters(q);
        const p99Ms = quarters(Math.abs(p));
        const want = numbersOf(expected(remainingMs, p99Ms));
        for (const [door, run] of Object.entries(DOORS)) {
          if (door === EXECUTOR && p99Ms === 0) continue;
          expect(
            numbersOf(await run(remainingMs, p99Ms)),
            `${door}: ${remainingMs} left, p99 ${p99Ms}`,
          ).toEqual(want);
        }
      }),
      { numRuns: 150 },
    );
  });
});
