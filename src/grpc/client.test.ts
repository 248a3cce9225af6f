import { Metadata, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineExceeded, isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { deadlineInterceptor } from './client.js';
import { grpcDeadlineEpochMs } from './epoch.js';
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

/** Calls `say` with the caller's own `metadata`. */
const sayWith = (client: unknown, metadata: Metadata): Promise<unknown> =>
  new Promise((resolve, reject) =>
    (client as { say: (...args: unknown[]) => unknown }).say({}, metadata, {}, (e: unknown) =>
      e ? reject(e) : resolve(undefined),
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
    // A header the caller set itself is left as it is, each by its name.
    const own = new Metadata();
    own.set('x-envoy-expected-rq-timeout-ms', '7');
    await runWithDeadline(Deadline.after(800), () => sayWith(withEnvoy, own));
    expect(lastMetadata.get('x-envoy-expected-rq-timeout-ms')).toEqual(['7']);
    expect(lastEpochMetadata).toHaveLength(1);
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
