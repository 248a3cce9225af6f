import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { status as grpcStatus } from '@grpc/grpc-js';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { createPool as createMysqlPool } from 'mysql2';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/clock/fake.js';
import { waitFor, waitForOrThrow } from '../../../src/clock/poll.test-helpers.js';
import { systemClock } from '../../../src/clock/system.js';
import { callWithDeadline } from '../../../src/deadline/call.js';
import { Deadline } from '../../../src/deadline/deadline.js';
import { fitsDeadline, MIN_ATTEMPT_MS, neededMs } from '../../../src/deadline/fits.js';
import { withinDeadline } from '../../../src/deadline/store.js';
import { createDependency } from '../../../src/dependency/dependency.js';
import { DeadlineExceededError, type DeadlineInsufficientError } from '../../../src/errors/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../../../src/errors/guards.js';
import { deadlineInterceptor } from '../../../src/grpc/client.js';
import { echoClient } from '../../../src/grpc/grpc.test-helpers.js';
import { createHttpClient } from '../../../src/http/client.js';
import { mysqlQuery } from '../../../src/mysql/query.js';
import { queryWithDeadline } from '../../../src/pg/query.js';
import { redisDeadlineClient } from '../../../src/redis/client.js';

/**
 * Attacks on SPEC D4's one rule (src/deadline/fits.ts: an attempt needs the p99 left, and at least
 * 1 ms) through every door that asks it: the executor, `callWithDeadline`, the stores (prazo/pg,
 * prazo/mysql, prazo/redis, on their real drivers) and the gRPC interceptor (on a real channel). The
 * doors' targets point at a loopback listener that counts connections: a refusal must open none.
 * Boundary values, a deadline already gone, p99 0, Infinity; the same verdict and the same numbers
 * everywhere.
 */

let listener: Server;
let port = 0;
let connections = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // Accepts, counts, and drops: a driver that got this far touched the network.
  listener = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => listener.close(() => resolve()));
});

describe('fits attacks: the rule itself', () => {
  it('needs the p99 and at least 1 ms; NaN and negative left never fit; an endless deadline always does', () => {
    expect(fitsDeadline(50, 50)).toBe(true);
    expect(fitsDeadline(49.999_999, 50)).toBe(false);
    expect(fitsDeadline(1, 0)).toBe(true);
    expect(fitsDeadline(0.999, 0)).toBe(false);
    expect(fitsDeadline(0, 0)).toBe(false);
    expect(fitsDeadline(-0, 0)).toBe(false);
    expect(fitsDeadline(Number.NaN, 0)).toBe(false);
    expect(fitsDeadline(-5, 0)).toBe(false);
    expect(fitsDeadline(Number.POSITIVE_INFINITY, 86_400_000)).toBe(true);
    expect(fitsDeadline(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY)).toBe(true);
    expect(fitsDeadline(2 ** 31, Number.POSITIVE_INFINITY)).toBe(false);
    // A p99 that is not a number is no excuse to start with nothing left.
    expect(fitsDeadline(0.5, Number.NaN)).toBe(false);
    expect(neededMs(Number.NaN)).toBe(MIN_ATTEMPT_MS);
    expect(neededMs(-3)).toBe(MIN_ATTEMPT_MS);
  });

  it('is monotone: more time left never turns a fit into a refusal, a larger p99 never the reverse (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: false }),
        fc.double({ min: 0, noNaN: true }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (left, more, p99) => {
          if (fitsDeadline(left, p99)) {
            expect(fitsDeadline(left + more, p99)).toBe(true);
            expect(left).toBeGreaterThanOrEqual(1);
            expect(left).toBeGreaterThanOrEqual(p99);
          }
          if (!fitsDeadline(left, p99)) expect(fitsDeadline(left, p99 + more)).toBe(false);
        },
      ),
    );
  });
});

type Verdict = { refused: true; error: DeadlineInsufficientError } | { refused: false };

/** A door: asked to start something with `left` ms of a fake-clock deadline and a p99 of `p99`. */
type Door = (clock: FakeClock, deadline: Deadline, p99: number) => Promise<Verdict>;

/** Settles `pending` into a verdict: refused when it rejects with DEADLINE_INSUFFICIENT (or carries it as cause). */
async function verdictOf(pending: Promise<unknown>, realWaitMs = 0): Promise<Verdict> {
  let outcome: unknown = 'pending';
  const settled = pending.then(
    () => 'went',
    (error: unknown) => error,
  );
  settled.then((o) => {
    outcome = o;
  });
  if (realWaitMs > 0) await Promise.race([settled, new Promise((r) => setTimeout(r, realWaitMs))]);
  else for (let i = 0; i < 20; i += 1) await Promise.resolve();
  const cause = (outcome as { cause?: unknown })?.cause;
  if (isDeadlineInsufficient(outcome)) return { refused: true, error: outcome as DeadlineInsufficientError };
  if (isDeadlineInsufficient(cause)) return { refused: true, error: cause as DeadlineInsufficientError };
  return { refused: false };
}

const DOORS: Record<string, Door> = {
  executor: async (clock, deadline, p99) => {
    const dep = createDependency({ name: 'door', p99Ms: p99, clock, throttle: false });
    let ran = false;
    const pending = dep.execute(
      () => {
        ran = true;
        return Promise.resolve('ok');
      },
      { deadline, idempotent: false },
    );
    const v = await verdictOf(pending);
    expect(ran).toBe(!v.refused);
    return v;
  },
  callWithDeadline: async (_clock, deadline, p99) => {
    let ran = false;
    const pending = callWithDeadline(deadline, {
      name: 'door',
      p99Ms: p99,
      execute: () => {
        ran = true;
        return Promise.resolve('ok');
      },
    });
    const v = await verdictOf(pending);
    expect(ran).toBe(!v.refused);
    return v;
  },
  http: async (clock, deadline, p99) => {
    // prazo/http through its executor: a real undici pool to the counting listener.
    const client = createHttpClient({
      name: 'door',
      origin: `http://127.0.0.1:${port}`,
      p99Ms: p99,
      clock,
      attempts: 1,
      throttle: false,
    });
    try {
      return await verdictOf(
        client.request('/', { deadline }).then((res) => res.body.dump()),
        300,
      );
    } finally {
      void client.destroy();
    }
  },
  pg: async (clock, deadline, p99) => {
    const pool = new pg.Pool({
      host: '127.0.0.1',
      port,
      user: 'x',
      database: 'x',
      connectionTimeoutMillis: 2_000,
    });
    pool.on('error', () => undefined);
    try {
      return await verdictOf(
        queryWithDeadline(pool, 'SELECT 1', [], { name: 'door', p99Ms: p99, deadline, clock }),
        300,
      );
    } finally {
      void pool.end().catch(() => undefined);
    }
  },
  mysql: async (clock, deadline, p99) => {
    const pool = createMysqlPool({ host: '127.0.0.1', port, user: 'x', connectTimeout: 2_000 });
    pool.on('error', () => undefined);
    try {
      return await verdictOf(
        mysqlQuery(pool, 'SELECT 1', undefined, { name: 'door', p99Ms: p99, deadline, clock }),
        300,
      );
    } finally {
      pool.end(() => undefined);
    }
  },
  redis: async (clock, deadline, p99) => {
    const raw = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    raw.on('error', () => undefined);
    const client = redisDeadlineClient(raw, { name: 'door', p99Ms: p99, clock });
    try {
      return await verdictOf(client.command('GET', ['k'], { deadline }), 300);
    } finally {
      raw.disconnect();
    }
  },
  grpc: async (clock, deadline, p99) => {
    // The interceptor reads the wall clock: the call's deadline is the fake clock's epoch + what is left.
    const client = echoClient(`127.0.0.1:${port}`, {
      interceptors: [deadlineInterceptor({ name: 'door', p99Ms: p99, clock })],
    });
    try {
      const pending = new Promise((resolve, reject) =>
        client.say({ text: 'x' }, { deadline: deadline.epochMs() }, (error, value) =>
          error ? reject(error) : resolve(value),
        ),
      );
      const v = await verdictOf(pending, 300);
      return v;
    } finally {
      client.close();
    }
  },
};

/** (time left, p99) pairs on each side of the boundary, every door able to take them (p99 > 0). */
const CASES: ReadonlyArray<readonly [number, number]> = [
  [0, 5], // already expired
  [4, 5],
  [5, 5],
  [6, 5],
  [49, 50],
  [50, 50],
  [1, 0.5], // p99 under the 1 ms floor
  [0, 0.5],
];

describe('fits attacks: the same verdict and the same numbers through every door', () => {
  for (const [door, ask] of Object.entries(DOORS)) {
    it.each(CASES)(`${door}: %s ms left, p99 %s ms`, async (left, p99) => {
      // The grpc door reads the wall clock: its fake clock starts at the real epoch, whole ms.
      const clock = new FakeClock({ epoch: Math.floor(systemClock.epochNow()) });
      const deadline = left === 0 ? Deadline.after(-1, { clock }) : Deadline.after(left, { clock });
      const before = connections;
      const verdict = await ask(clock, deadline, p99);
      const expected = !fitsDeadline(left, p99);
      expect(verdict.refused).toBe(expected);
      if (verdict.refused) {
        expect(connections - before).toBe(0); // nothing left the process
        expect(verdict.error.dependency).toBe('door');
        expect(verdict.error.remainingMs).toBe(left);
        expect(verdict.error.neededMs).toBe(neededMs(p99)); // the rule applied: at least 1 ms
        expect(verdict.error.remainingMs).toBeGreaterThanOrEqual(0);
      }
    });
  }
});

describe('fits attacks: p99 bounds at each door', () => {
  it('refuses a p99 that is NaN, negative or Infinity where it is declared, before any I/O', () => {
    const clock = new FakeClock();
    for (const p99Ms of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      expect(() => createDependency({ name: 'x', p99Ms, clock })).toThrow(/p99Ms/);
      expect(() => deadlineInterceptor({ p99Ms })).toThrow(/p99Ms/);
      expect(() =>
        redisDeadlineClient({ duplicate: () => undefined, call: () => undefined } as never, { p99Ms }),
      ).toThrow(/p99Ms/);
    }
  });

  it('callWithDeadline rejects (never throws) a p99 that is NaN, negative or Infinity', async () => {
    const clock = new FakeClock();
    for (const p99Ms of [Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      const error = await callWithDeadline(Deadline.after(100, { clock }), {
        name: 'x',
        p99Ms,
        execute: () => Promise.resolve(1),
      }).catch((e: unknown) => e);
      expect(isInvalidOptions(error), String(error)).toBe(true);
    }
  });
});

describe('fits attacks: an endless or very far deadline', () => {
  it('callWithDeadline under Deadline.after(Infinity) runs, and is not cut at the timer limit (24.8 days)', async () => {
    const clock = new FakeClock();
    let signal: AbortSignal | undefined;
    let resolve!: (v: string) => void;
    const pending = callWithDeadline(Deadline.after(Number.POSITIVE_INFINITY, { clock }), {
      name: 'x',
      p99Ms: 10,
      execute: (ctx) => {
        signal = ctx.signal;
        return new Promise<string>((r) => {
          resolve = r;
        });
      },
    });
    let outcome: unknown = 'pending';
    pending.then(
      (v) => {
        outcome = v;
      },
      (e: unknown) => {
        outcome = e;
      },
    );
    await clock.advanceAsync(2 ** 31 + 1_000); // past the longest delay a timer holds
    expect(outcome).toBe('pending');
    expect(signal?.aborted).toBe(false);
    resolve('late but fine');
    await clock.advanceAsync(0);
    expect(outcome).toBe('late but fine');
  });

  it('callWithDeadline 30 days away ends with DEADLINE_EXCEEDED at 30 days, not at 24.8', async () => {
    const clock = new FakeClock();
    const day = 86_400_000;
    const pending = callWithDeadline(Deadline.after(30 * day, { clock }), {
      name: 'x',
      p99Ms: 10,
      execute: () => new Promise<never>(() => undefined),
    });
    let outcome: unknown = 'pending';
    pending.catch((e: unknown) => {
      outcome = e;
    });
    await clock.advanceAsync(25 * day);
    expect(outcome).toBe('pending');
    await clock.advanceAsync(5 * day);
    expect(isDeadlineExceeded(outcome)).toBe(true);
    expect(outcome).toBeInstanceOf(DeadlineExceededError);
  });

  it("a store's wait for a pooled connection under a 30-day or endless deadline is not cut at 24.8 days", async () => {
    const day = 86_400_000;
    for (const ms of [30 * day, Number.POSITIVE_INFINITY]) {
      const clock = new FakeClock();
      const deadline = Deadline.after(ms, { clock });
      let arrive!: (c: string) => void;
      const given: string[] = [];
      const waiting = withinDeadline(
        new Promise<string>((r) => {
          arrive = r;
        }),
        deadline,
        clock,
        { giveBack: (c) => given.push(c), expired: (elapsedMs) => new DeadlineExceededError({ elapsedMs }) },
      );
      let outcome: unknown = 'pending';
      waiting.then(
        (v) => {
          outcome = v;
        },
        (e: unknown) => {
          outcome = e;
        },
      );
      await clock.advanceAsync(25 * day);
      expect(outcome, `deadline ${ms} ms`).toBe('pending');
      if (ms === Number.POSITIVE_INFINITY) {
        arrive('connection');
        await clock.advanceAsync(0);
        expect(outcome).toBe('connection');
        expect(clock.pendingTimers()).toBe(0);
      } else {
        await clock.advanceAsync(5 * day);
        expect(isDeadlineExceeded(outcome)).toBe(true);
        arrive('late connection');
        await clock.advanceAsync(0);
        expect(given).toEqual(['late connection']); // given back to its pool, never leaked
      }
    }
  });

  // Was a defect (fixed): `bounded()` armed `deadline.remainingMs() + graceMs` as one timer, which a
  // timer clamps to 2^31 − 1 ms: a command under a 30-day deadline was failed DEADLINE_EXCEEDED
  // (outcome unknown) at 24.8 days. It is armed with `armDeadlineTimer` now (src/deadline/timer.ts).
  it('a redis command under a 30-day deadline is not failed at 24.8 days', async () => {
    const day = 86_400_000;
    const clock = new FakeClock();
    let answer!: (v: unknown) => void;
    const connection = {
      duplicate: () => connection,
      call: () =>
        new Promise((r) => {
          answer = r;
        }),
    };
    const client = redisDeadlineClient(connection as never, { name: 'door', clock });
    let outcome: unknown = 'pending';
    client.command('GET', ['k'], { deadline: Deadline.after(30 * day, { clock }) }).then(
      (v) => {
        outcome = v;
      },
      (e: unknown) => {
        outcome = e;
      },
    );
    await clock.advanceAsync(25 * day);
    expect(outcome).toBe('pending');
    answer('value');
    await clock.advanceAsync(0);
    expect(outcome).toBe('value');
  });

  it('the gRPC interceptor refuses a call whose deadline is already gone, on a real channel, no connection', async () => {
    const clock = new FakeClock({ epoch: Math.floor(systemClock.epochNow()) });
    const client = echoClient(`127.0.0.1:${port}`, {
      interceptors: [deadlineInterceptor({ name: 'door', p99Ms: 5, clock })],
    });
    try {
      const before = connections;
      const gone = await new Promise<{ code?: number; cause?: unknown }>((resolve) =>
        client.say({ text: 'x' }, { deadline: clock.epochNow() - 10 }, (error) => resolve(error ?? {})),
      );
      expect(gone.code).toBe(grpcStatus.DEADLINE_EXCEEDED);
      expect(isDeadlineInsufficient(gone.cause)).toBe(true);
      expect(connections).toBe(before);
    } finally {
      client.close();
    }
  });
});

/** A promise's outcome as it stands: 'pending', its value, or its error. */
function track(promise: Promise<unknown>): { readonly outcome: unknown } {
  const state = { outcome: 'pending' as unknown };
  promise.then(
    (v) => {
      state.outcome = v;
    },
    (e: unknown) => {
      state.outcome = e;
    },
  );
  return state;
}

describe("fits attacks: a store's own timers under a deadline beyond a timer's range (2^31 − 1 ms)", () => {
  const day = 86_400_000;

  it('a redis command under a 30-day or endless deadline is not failed at 24.8 days; at 30 days it is, DEADLINE_EXCEEDED', async () => {
    for (const ms of [30 * day, Number.POSITIVE_INFINITY]) {
      const clock = new FakeClock();
      let answer!: (v: unknown) => void;
      const connection = {
        duplicate: () => connection,
        call: () =>
          new Promise((r) => {
            answer = r;
          }),
      };
      const client = redisDeadlineClient(connection as never, { name: 'door', clock, cancelGraceMs: 50 });
      const run = track(client.command('GET', ['k'], { deadline: Deadline.after(ms, { clock }) }));
      await clock.advanceAsync(25 * day);
      expect(run.outcome, `deadline ${ms} ms`).toBe('pending');
      if (ms === Number.POSITIVE_INFINITY) {
        expect(clock.pendingTimers()).toBe(0); // an endless deadline arms nothing
        answer('value');
        await clock.advanceAsync(0);
        expect(run.outcome).toBe('value');
      } else {
        await clock.advanceAsync(5 * day + 50);
        expect(isDeadlineExceeded(run.outcome)).toBe(true);
        expect(client.stuck).toBe(1); // set aside until its late reply comes
      }
    }
  });

  it('a redis command waiting for a free connection under a 30-day or endless deadline waits past 24.8 days; at 30 days it ends DEADLINE_EXCEEDED', async () => {
    for (const ms of [30 * day, Number.POSITIVE_INFINITY]) {
      const clock = new FakeClock();
      const connection = { duplicate: () => connection, call: () => Promise.resolve('OK') };
      const client = redisDeadlineClient(connection as never, { name: 'door', clock, maxConnections: 1 });
      let release!: () => void;
      // The only connection, held by a session: the command waits for it.
      const held = client.session(
        () =>
          new Promise<void>((r) => {
            release = r;
          }),
      );
      const run = track(client.command('GET', ['k'], { deadline: Deadline.after(ms, { clock }) }));
      await clock.advanceAsync(25 * day);
      expect(run.outcome, `deadline ${ms} ms`).toBe('pending');
      if (ms === Number.POSITIVE_INFINITY) {
        expect(clock.pendingTimers()).toBe(0);
      } else {
        await clock.advanceAsync(5 * day);
        expect(isDeadlineExceeded(run.outcome)).toBe(true);
      }
      release();
      await held;
      await clock.advanceAsync(0);
      if (ms === Number.POSITIVE_INFINITY) expect(run.outcome).toBe('OK');
    }
  });

  it('a pg statement under a 30-day or endless deadline gets no cancel request at 24.8 days; at 30 days it does, DEADLINE_EXCEEDED', async () => {
    let cancels = 0;
    let fail: ((e: unknown) => void) | undefined;
    // The cancel request is a real connection to the "server" (sendCancelRequest): this one cancels.
    const cancelServer = createServer((socket) => {
      cancels += 1;
      socket.on('error', () => undefined);
      socket.destroy();
      fail?.(
        Object.assign(new Error('canceling statement due to user request'), {
          code: '57014',
          severity: 'ERROR',
        }),
      );
    });
    await new Promise<void>((resolve) => cancelServer.listen(0, '127.0.0.1', resolve));
    try {
      for (const ms of [30 * day, Number.POSITIVE_INFINITY]) {
        const clock = new FakeClock();
        let succeed: ((v: unknown) => void) | undefined;
        const client = {
          processID: 42,
          secretKey: 7,
          host: '127.0.0.1',
          port: (cancelServer.address() as AddressInfo).port,
          getTransactionStatus: () => 'I',
          query: (sql: string) =>
            sql === 'SELECT long_report()'
              ? new Promise((resolve, reject) => {
                  succeed = resolve;
                  fail = reject;
                })
              : Promise.resolve({ rows: [] }),
        };
        const before = cancels;
        const run = track(
          queryWithDeadline(client as never, 'SELECT long_report()', [], {
            deadline: Deadline.after(ms, { clock }),
            clock,
          }),
        );
        await clock.advanceAsync(25 * day);
        await waitFor(() => cancels > before, 300); // a cancel sent would arrive by then
        expect(cancels - before, `deadline ${ms} ms`).toBe(0);
        expect(run.outcome, `deadline ${ms} ms`).toBe('pending');
        if (ms === Number.POSITIVE_INFINITY) {
          expect(clock.pendingTimers()).toBe(0);
          succeed?.({ rows: [{ ok: 1 }] });
          await waitForOrThrow(() => run.outcome !== 'pending', 5_000, 'the answer');
          expect(run.outcome).toEqual({ rows: [{ ok: 1 }] });
        } else {
          await clock.advanceAsync(5 * day + 100); // the deadline + cancelGraceMs (default 100)
          await waitForOrThrow(() => run.outcome !== 'pending', 5_000, 'the cancel');
          expect(cancels - before).toBe(1);
          expect(isDeadlineExceeded(run.outcome), String(run.outcome)).toBe(true);
        }
      }
    } finally {
      await new Promise<void>((resolve) => cancelServer.close(() => resolve()));
    }
  });

  it('a mysql statement under a 30-day or endless deadline is not killed at 24.8 days; at 30 days it is, DEADLINE_EXCEEDED', async () => {
    for (const ms of [30 * day, Number.POSITIVE_INFINITY]) {
      const clock = new FakeClock();
      let succeed!: (v: unknown) => void;
      let interrupt!: (e: unknown) => void;
      const kills: string[] = [];
      const connection = {
        threadId: 7,
        query: () =>
          new Promise((resolve, reject) => {
            succeed = resolve;
            interrupt = reject;
          }),
      };
      // Where KILL QUERY goes: it interrupts the statement, as the server does (1317).
      const killVia = {
        query: (sql: string) => {
          kills.push(sql);
          interrupt(
            Object.assign(new Error('Query execution was interrupted'), { errno: 1317, sqlState: '70100' }),
          );
          return Promise.resolve([[], []]);
        },
      };
      // An UPDATE on MySQL takes no server-side limit: only the client's kill timer ends it.
      const run = track(
        mysqlQuery(connection as never, 'UPDATE jobs SET state = 1', undefined, {
          deadline: Deadline.after(ms, { clock }),
          clock,
          server: 'mysql',
          killVia: killVia as never,
        }),
      );
      await clock.advanceAsync(25 * day);
      expect(kills, `deadline ${ms} ms`).toEqual([]);
      expect(run.outcome, `deadline ${ms} ms`).toBe('pending');
      if (ms === Number.POSITIVE_INFINITY) {
        expect(clock.pendingTimers()).toBe(0);
        succeed([{ affectedRows: 1 }, []]);
        await clock.advanceAsync(0);
        expect(run.outcome).toEqual([{ affectedRows: 1 }, []]);
      } else {
        await clock.advanceAsync(5 * day);
        expect(kills).toEqual(['KILL QUERY 7']);
        expect(isDeadlineExceeded(run.outcome), String(run.outcome)).toBe(true);
      }
    }
  });
});
