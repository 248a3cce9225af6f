import { Metadata, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { deadlineInterceptor } from './client.js';
import { grpcDeadlineEpochMs } from './deadline.js';
import { echoClient, type SayReply, say, startEcho } from './grpc.test-helpers.js';
import { prazoErrorOf } from './status.js';

/** A plain grpc-js server (no prazo) reporting the deadline each call arrived with. */
let calls = 0;
let lastEpochMetadata: unknown[] = [];
let lastMetadata = new Metadata();
let echo: Awaited<ReturnType<typeof startEcho>>;
beforeAll(async () => {
  echo = await startEcho({
    say: (
      call: { getDeadline(): unknown; request: { delayMs: number } },
      cb: (e: null, r: SayReply) => void,
    ) => {
      calls += 1;
      lastMetadata = (call as unknown as { metadata: Metadata }).metadata;
      lastEpochMetadata = lastMetadata.get('x-deadline-epoch-ms');
      const epoch = grpcDeadlineEpochMs(call.getDeadline());
      const reply = () =>
        cb(null, {
          text: 'ok',
          remainingMs: epoch === undefined ? -1 : epoch - Date.now(),
          deadlineEpochMs: epoch ?? 0,
        });
      setTimeout(reply, call.request.delayMs);
    },
  });
});
afterAll(() => echo.stop());

/** The reply of the last call made with {@link sayWith}. */
let lastReply: SayReply = { text: '', remainingMs: 0, deadlineEpochMs: 0 };

/** Calls `say` with the caller's own `metadata`. */
const sayWith = (client: unknown, metadata: Metadata, request: { delayMs?: number } = {}): Promise<unknown> =>
  new Promise((resolve, reject) =>
    (client as { say: (...args: unknown[]) => unknown }).say(
      request,
      metadata,
      {},
      (e: unknown, r?: SayReply) => {
        if (e) reject(e);
        else {
          lastReply = r!;
          resolve(undefined);
        }
      },
    ),
  );

describe('deadlineInterceptor (real grpc-js client and server on 127.0.0.1)', () => {
  const client = () => echoClient(echo.address, { interceptors: [deadlineInterceptor({ p99Ms: 100 })] });

  it('sets the call deadline from the ambient one (SPEC D1, D5)', async () => {
    const c = client();
    const deadline = Deadline.after(800);
    const reply = await runWithDeadline(deadline, () => say(c, {}));
    // grpc-timeout is relative: the server rebuilds the instant from its own clock, within a few ms
    expect(Math.abs(reply.deadlineEpochMs - deadline.epochMs())).toBeLessThan(50);
    expect(reply.remainingMs).toBeGreaterThan(500);
    expect(reply.remainingMs).toBeLessThanOrEqual(800);
    c.close();
  });

  it('sends the absolute deadline too (x-deadline-epoch-ms), which no transit lag stretches (SPEC D1, D5)', async () => {
    const c = client();
    const deadline = Deadline.after(800);
    await runWithDeadline(deadline, () => say(c, {}));
    // epochMs() is the monotonic deadline read against the wall clock now: two reads can straddle a ms.
    expect(lastEpochMetadata).toHaveLength(1);
    expect(Math.abs(Number(lastEpochMetadata[0]) - Math.floor(deadline.epochMs()))).toBeLessThanOrEqual(1);
    await say(c, {});
    expect(lastEpochMetadata).toEqual([]); // no deadline, nothing sent
    c.close();
  });

  it("writes its deadline headers in the `deadlineHeaders` format: Envoy's too, another name, or none (SPEC D1, D5, D8)", async () => {
    const withEnvoy = echoClient(echo.address, {
      interceptors: [deadlineInterceptor({ p99Ms: 100, deadlineHeaders: { envoy: true } })],
    });
    const deadline = Deadline.after(800);
    await runWithDeadline(deadline, () => say(withEnvoy, {}));
    expect(lastEpochMetadata).toHaveLength(1);
    expect(Math.abs(Number(lastEpochMetadata[0]) - Math.floor(deadline.epochMs()))).toBeLessThanOrEqual(1);
    const [envoy] = lastMetadata.get('x-envoy-expected-rq-timeout-ms');
    expect(envoy).toMatch(/^\d+$/); // whole ms left when the call started
    expect(Number(envoy)).toBeGreaterThanOrEqual(600);
    expect(Number(envoy)).toBeLessThanOrEqual(800);
    // A header the caller set itself under one of these names is its own deadline (SPEC D5): a later
    // one (or Envoy's 0, "no timeout") is replaced by the call's, each by its name ...
    for (const value of ['60000', '0']) {
      const later = new Metadata();
      later.set('x-envoy-expected-rq-timeout-ms', value);
      await runWithDeadline(Deadline.after(800), () => sayWith(withEnvoy, later));
      const [sent] = lastMetadata.get('x-envoy-expected-rq-timeout-ms');
      expect(lastMetadata.get('x-envoy-expected-rq-timeout-ms'), value).toHaveLength(1);
      expect(Number(sent), value).toBeGreaterThanOrEqual(600);
      expect(Number(sent), value).toBeLessThanOrEqual(800);
      expect(lastEpochMetadata, value).toHaveLength(1);
    }
    // ... and 7 ms, less than the p99, is refused before anything is sent (D4).
    const near = new Metadata();
    near.set('x-envoy-expected-rq-timeout-ms', '7');
    const before = calls;
    const refused = await runWithDeadline(Deadline.after(800), () => sayWith(withEnvoy, near)).catch(
      (e: unknown) => e,
    );
    expect(isDeadlineInsufficient(prazoErrorOf(refused))).toBe(true);
    expect(calls).toBe(before);
    await say(withEnvoy, {});
    expect(lastMetadata.get('x-envoy-expected-rq-timeout-ms')).toEqual([]); // no deadline, nothing sent
    withEnvoy.close();

    const renamed = echoClient(echo.address, {
      interceptors: [deadlineInterceptor({ deadlineHeaders: { epochMs: 'x-my-deadline' } })],
    });
    const later = Deadline.after(800);
    await runWithDeadline(later, () => say(renamed, {}));
    expect(lastEpochMetadata).toEqual([]);
    const [mine] = lastMetadata.get('x-my-deadline');
    expect(Math.abs(Number(mine) - Math.floor(later.epochMs()))).toBeLessThanOrEqual(1);
    renamed.close();

    const none = echoClient(echo.address, {
      interceptors: [deadlineInterceptor({ deadlineHeaders: { epochMs: false } })],
    });
    const reply = await runWithDeadline(Deadline.after(800), () => say(none, {}));
    expect(lastEpochMetadata).toEqual([]);
    expect(reply.remainingMs).toBeGreaterThan(0); // grpc-timeout still carries it
    none.close();
  });

  it('keeps an earlier deadline of the call itself, and adds none outside any deadline', async () => {
    const c = client();
    const own = await runWithDeadline(Deadline.after(5_000), () =>
      say(c, {}, { deadline: Date.now() + 400 }),
    );
    expect(own.remainingMs).toBeLessThanOrEqual(400);
    const none = await say(c, {});
    expect(none.remainingMs).toBe(-1);
    c.close();
  });

  it("a caller's own deadline metadata bounds the call, and the earlier deadline travels (SPEC D1, D3, D5)", async () => {
    const c = client();
    const withOwn = (name: string, value: string): Metadata => {
      const metadata = new Metadata();
      metadata.set(name, value);
      return metadata;
    };
    // An earlier x-deadline-epoch-ms than the ambient deadline, or the only deadline there is; a
    // grpc-timeout key of the caller's own (grpc-js writes the call's over it).
    for (const [label, metadata, ambientMs] of [
      [
        'x-deadline-epoch-ms under a 3 s ambient',
        withOwn('x-deadline-epoch-ms', String(Date.now() + 400)),
        3_000,
      ],
      ['x-deadline-epoch-ms alone', withOwn('x-deadline-epoch-ms', String(Date.now() + 400)), undefined],
      ['grpc-timeout under a 3 s ambient', withOwn('grpc-timeout', '400m'), 3_000],
    ] as const) {
      const t0 = Date.now();
      const run = () => sayWith(c, metadata);
      await (ambientMs === undefined ? run() : runWithDeadline(Deadline.after(ambientMs), run));
      expect(lastReply.remainingMs, label).toBeGreaterThan(0);
      expect(lastReply.remainingMs, label).toBeLessThanOrEqual(400);
      expect(lastEpochMetadata, label).toHaveLength(1);
      expect(Number(lastEpochMetadata[0]), label).toBeLessThanOrEqual(t0 + 400 + 5);
    }
    // It ends the call: DEADLINE_EXCEEDED at the caller's deadline, not the ambient one's.
    const t0 = performance.now();
    const late = withOwn('x-deadline-epoch-ms', String(Date.now() + 200));
    const error = await runWithDeadline(Deadline.after(3_000), () =>
      sayWith(c, late, { delayMs: 1_000 }).catch((e: unknown) => e),
    );
    expect(error).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect(isDeadlineExceeded(prazoErrorOf(error))).toBe(true);
    expect(performance.now() - t0).toBeLessThan(800);
    c.close();
  });

  it("a caller's later, garbage or far deadline metadata extends nothing and is replaced by the call's (SPEC D3, D5)", async () => {
    const c = client();
    const values = ['x', '-5', '1e3', '0x10', '', ' 12 34', String(Date.now() + 60_000), '9999999999999999'];
    for (const value of values) {
      const metadata = new Metadata();
      metadata.set('x-deadline-epoch-ms', value);
      const deadline = Deadline.after(800);
      await runWithDeadline(deadline, () => sayWith(c, metadata));
      expect(lastReply.remainingMs, value).toBeGreaterThan(0);
      expect(lastReply.remainingMs, value).toBeLessThanOrEqual(800);
      expect(lastEpochMetadata, value).toHaveLength(1);
      expect(
        Math.abs(Number(lastEpochMetadata[0]) - Math.floor(deadline.epochMs())),
        value,
      ).toBeLessThanOrEqual(1);
    }
    // Without any other deadline, garbage or a deadline further than a timer can hold sets none.
    for (const value of ['garbage', '9999999999999999']) {
      const metadata = new Metadata();
      metadata.set('x-deadline-epoch-ms', value);
      await sayWith(c, metadata);
      expect(lastReply.remainingMs, value).toBe(-1);
    }
    c.close();
  });

  it('fails fast with DEADLINE_EXCEEDED, cause DeadlineInsufficientError, when less than p99 is left (SPEC D4)', async () => {
    const c = client();
    const before = calls;
    const started = performance.now();
    const error = await runWithDeadline(Deadline.after(60), () => say(c, {})).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect((error as { details: string }).details).toMatch(
      /^prazo: deadline insufficient for \/prazo\.test\.Echo\/Say/,
    );
    const cause = prazoErrorOf(error);
    expect(isDeadlineInsufficient(cause)).toBe(true);
    expect(cause).toMatchObject({ neededMs: 100, dependency: '/prazo.test.Echo/Say' });
    expect(elapsed).toBeLessThan(60);
    expect(calls).toBe(before);
    const expired = await runWithDeadline(Deadline.after(0), () => say(c, {})).catch((e: unknown) => e);
    expect(isDeadlineInsufficient(prazoErrorOf(expired))).toBe(true);
    expect(calls).toBe(before);
    c.close();
  });

  it('explains a deadline that runs out during the call with a DeadlineExceededError cause (SPEC D6)', async () => {
    const c = echoClient(echo.address, { interceptors: [deadlineInterceptor({ name: 'echo' })] });
    const error = await runWithDeadline(Deadline.after(150), () => say(c, { delayMs: 1_000 })).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    const cause = prazoErrorOf(error);
    expect(isDeadlineExceeded(cause)).toBe(true);
    expect(cause).toMatchObject({ dependency: 'echo' });
    c.close();
  });

  it('validates its options together', () => {
    let caught: unknown;
    try {
      deadlineInterceptor({ p99Ms: -1, name: '', clock: {} as never });
    } catch (error) {
      caught = error;
    }
    expect(isInvalidOptions(caught)).toBe(true);
    expect((caught as { problems: string[] }).problems).toHaveLength(3);
  });

  it('reads `deadlineHeaders` with the deadline\'s own declaration: a typo gets a "did you mean"', () => {
    const problemsOf = (options: unknown): string[] => {
      try {
        deadlineInterceptor(options as never);
      } catch (error) {
        expect(isInvalidOptions(error)).toBe(true);
        return [...(error as { problems: string[] }).problems];
      }
      throw new Error('expected the options to be refused');
    };
    expect(problemsOf({ deadlineHeaders: { envoi: true } })).toEqual([
      expect.stringMatching(/`deadlineHeaders\.envoi`.*did you mean `envoy`/),
    ]);
    // A valid HTTP header name that gRPC metadata cannot carry (grpc-js would throw at the call).
    expect(problemsOf({ deadlineHeaders: { epochMs: 'x-deadline-bin' } })).toEqual([
      expect.stringMatching(/`deadlineHeaders\.epochMs` \("x-deadline-bin"\) is not a gRPC metadata key/),
    ]);
  });
});
