import fc from 'fast-check';
import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import type { DependencyEvent } from '../dependency/types.js';
import { driveCall, FakeController, settle } from './call.test-helpers.js';

/**
 * The attempt's phase machine on the fake clock, driven the way undici drives a handler on its
 * current API. The real sockets are in client.test.ts; here every instant is exact and every timer
 * is counted.
 */

const head = (headers: Record<string, string> = {}) => headers;

describe('HttpAttempt: one timer per attempt, phase-split timeouts (SPEC C2, D5, D6)', () => {
  it('fires RESPONSE_TIMEOUT at the response timeout after the request is written', () => {
    const { clock, attempt, handler, controller } = driveCall({ responseMs: 100 });
    attempt.onRequestStart(controller);
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(99);
    expect(handler.error).toBeUndefined();
    clock.advance(1);
    expect(controller.aborts).toHaveLength(1);
    expect(handler.error).toMatchObject({
      code: 'RESPONSE_TIMEOUT',
      dependency: 'inventory',
      timeoutMs: 100,
    });
    expect((handler.error as unknown as { elapsedMs: number }).elapsedMs).toBe(100);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('bounds the phase by the deadline: DEADLINE_EXCEEDED when the deadline comes first', () => {
    const { clock, attempt, handler, controller } = driveCall({ deadlineMs: 60, responseMs: 100 });
    attempt.onRequestStart(controller);
    clock.advance(60);
    expect(handler.error).toMatchObject({
      code: 'DEADLINE_EXCEEDED',
      dependency: 'inventory',
      elapsedMs: 60,
    });
  });

  it('settles a request still queued at the deadline at once, and refuses it when a socket frees up', () => {
    const { clock, attempt, handler, controller } = driveCall({ deadlineMs: 200 });
    clock.advance(200);
    expect(handler.events).toEqual(['error DEADLINE_EXCEEDED']);
    // undici gets to it later: it must never be written. A throwing onRequestStart makes undici drop
    // it from the queue; abort() would also destroy the connection (client.test.ts checks on sockets).
    expect(() => attempt.onRequestStart(controller)).toThrow(handler.error);
    expect(controller.aborts).toEqual([]);
    expect(handler.events).toEqual(['error DEADLINE_EXCEEDED']);
  });

  it('re-arms nothing while the body flows, fires BODY_TIMEOUT after a silence', async () => {
    const { clock, attempt, handler, controller } = driveCall({ deadlineMs: 10_000, bodyMs: 100 });
    attempt.onRequestStart(controller);
    clock.advance(30);
    attempt.onResponseStart(controller, 200, head(), 'OK');
    await settle();
    for (let i = 0; i < 10; i += 1) {
      clock.advance(60);
      attempt.onResponseData(controller, Buffer.from('x'));
      expect(clock.pendingTimers()).toBe(1);
    }
    expect(handler.error).toBeUndefined();
    clock.advance(99);
    expect(handler.error).toBeUndefined();
    clock.advance(1);
    expect(handler.error).toMatchObject({ code: 'BODY_TIMEOUT', timeoutMs: 100 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('does not count a paused consumer as a stalled body', async () => {
    const { clock, attempt, handler, controller } = driveCall({ deadlineMs: 1_000, bodyMs: 100 });
    attempt.onRequestStart(controller);
    attempt.onResponseStart(controller, 200, head(), 'OK');
    await settle();
    handler.more = false;
    attempt.onResponseData(controller, Buffer.from('x')); // the consumer's buffer is full: it pauses
    expect(controller.paused).toBe(true); // the pause reached undici's controller
    clock.advance(500);
    expect(handler.error).toBeUndefined();
    handler.controller!.resume(); // the consumer reads again: the body clock restarts
    expect(controller.paused).toBe(false);
    clock.advance(99);
    expect(handler.error).toBeUndefined();
    handler.more = true;
    clock.advance(1);
    expect(handler.error).toMatchObject({ code: 'BODY_TIMEOUT' });
  });

  it('never arms a body timer for a body that completes in the same read', async () => {
    const { clock, attempt, handler, controller } = driveCall({ responseMs: Number.POSITIVE_INFINITY });
    attempt.onRequestStart(controller);
    clock.advance(40);
    attempt.onResponseStart(controller, 503, head(), 'Service Unavailable');
    attempt.onResponseEnd(controller, {});
    await settle();
    expect(clock.pendingTimers()).toBe(0);
    expect(handler.events).toEqual(['headers 503', 'complete']);
  });

  it("is the executor's attempt bound, counted from the attempt's start, queue and connect included", () => {
    const { clock, attempt, handler, controller } = driveCall({ attemptMs: 140, responseMs: 140 });
    expect(clock.pendingTimers()).toBe(1); // the executor arms none of its own
    clock.advance(100); // 100 ms waiting for a socket
    attempt.onRequestStart(controller);
    expect(clock.pendingTimers()).toBe(1); // same bound: not re-armed
    clock.advance(39);
    expect(handler.error).toBeUndefined();
    clock.advance(1);
    expect(handler.error).toMatchObject({ code: 'RESPONSE_TIMEOUT', timeoutMs: 140, elapsedMs: 140 });
  });

  it('still queued at the attempt bound: QUEUE_TIMEOUT, phase queue, never written', () => {
    const { clock, dependency, attempt, handler, controller } = driveCall({ attemptMs: 140 });
    const seen: DependencyEvent[] = [];
    dependency.on((event) => seen.push(event));
    clock.advance(140);
    expect(handler.error).toMatchObject({ code: 'QUEUE_TIMEOUT', phase: 'queue', timeoutMs: 140 });
    expect(seen).toContainEqual(expect.objectContaining({ type: 'attempt-end', phase: 'queue' }));
    expect(dependency.recorder.currentWindow().count).toBe(0); // nothing reached the dependency
    expect(() => attempt.onRequestStart(controller)).toThrow(handler.error);
  });

  it('a cancel (the caller aborts, a hedge won) aborts the request with its reason and clears the timer', () => {
    const { clock, attempt, handler, controller } = driveCall();
    attempt.onRequestStart(controller);
    handler.controller!.abort(new Error('caller left'));
    expect(handler.error?.message).toBe('caller left');
    expect(controller.aborts).toHaveLength(1); // the socket is destroyed: the request stops for real
    expect(clock.pendingTimers()).toBe(0);
    expect(attempt.done).toBe(true);
  });

  it('a late timer lets pending I/O be read before its verdict, and says so', () => {
    const { clock, dependency, attempt, handler, controller } = driveCall({ responseMs: 100 });
    const seen: DependencyEvent[] = [];
    dependency.on((event) => seen.push(event));
    attempt.onRequestStart(controller);
    clock.stall(150); // the loop was blocked past the response bound
    clock.afterIo(() => attempt.onResponseStart(controller, 200, head(), 'OK')); // read after the timers
    clock.advance(0);
    expect(handler.error).toBeUndefined();
    expect(handler.events).toEqual(['headers 200']);
    expect(seen).toContainEqual({ type: 'timer-late', dependency: 'inventory', lateMs: 50 });
  });

  it('a late timer still decides once the pending I/O brought nothing', () => {
    const { clock, attempt, handler, controller } = driveCall({ responseMs: 100 });
    attempt.onRequestStart(controller);
    clock.stall(150);
    clock.advance(0);
    expect(handler.error).toMatchObject({ code: 'RESPONSE_TIMEOUT' });
  });

  it("maps undici's own timeouts to prazo's typed errors", () => {
    const cases: Array<[Error, string]> = [
      [new errors.ConnectTimeoutError(), 'CONNECT_TIMEOUT'],
      [new errors.HeadersTimeoutError(), 'RESPONSE_TIMEOUT'],
      [new errors.BodyTimeoutError(), 'BODY_TIMEOUT'],
    ];
    for (const [raw, code] of cases) {
      const { attempt, handler } = driveCall();
      attempt.onResponseError(null, raw);
      expect(handler.error).toMatchObject({ code, dependency: 'inventory' });
      expect((handler.error as Error).cause).toBe(raw);
    }
    const { attempt, handler } = driveCall();
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    attempt.onResponseError(new FakeController(attempt), reset);
    expect(handler.error).toBe(reset); // passes through: retry classification reads its code
  });
});

describe('HttpCall: what the caller sees of several attempts', () => {
  it('a retried 503 is drained, never shown; the retry’s answer streams to the caller', async () => {
    const { clock, attempts, handler, controller } = driveCall({ attempts: 2 });
    attempts[0]!.onRequestStart(controller);
    attempts[0]!.onResponseStart(controller, 503, head(), 'Service Unavailable');
    await clock.advanceAsync(30); // the backoff (full jitter below 25 ms)
    expect(attempts).toHaveLength(2);
    attempts[0]!.onResponseData(controller, Buffer.from('busy')); // drained, not forwarded
    const second = new FakeController(attempts[1]!);
    attempts[1]!.onRequestStart(second);
    attempts[1]!.onResponseStart(second, 200, head(), 'OK');
    attempts[1]!.onResponseData(second, Buffer.from('ok'));
    attempts[1]!.onResponseEnd(second, {});
    expect(handler.events).toEqual(['headers 200', 'data', 'complete']);
  });

  it('a held 503 that is not retried is delivered whole: head, then what came while it waited', () => {
    const { attempt, handler, controller } = driveCall({ attempts: 1 });
    attempt.onRequestStart(controller);
    attempt.onResponseStart(controller, 503, head({ 'retry-after': '1' }), 'Service Unavailable');
    attempt.onResponseData(controller, Buffer.from('busy'));
    attempt.onResponseEnd(controller, {});
    expect(handler.events).toEqual(['headers 503', 'data', 'complete']);
  });
});

describe('deadline headers out: one writer for every form (SPEC D1, D5; #25)', () => {
  /** The headers one attempt hands undici, read as undici reads them (an iterable of pairs, or flat). */
  const written = (headers: unknown): Record<string, string> => {
    const out: Record<string, string> = {};
    if (Array.isArray(headers))
      for (let i = 0; i + 1 < headers.length; i += 2) out[headers[i]] = headers[i + 1];
    else for (const [name, value] of headers as Iterable<[string, string]>) out[name] = value;
    return out;
  };

  it('never writes a zero timeout: with under 1 ms left, every form still says some time is left', () => {
    for (const leftMs of [0.9, 0.5, 0.01]) {
      const { clock, dispatched } = driveCall({
        deadlineMs: 10,
        deadlineHeaders: { grpcTimeout: true, envoy: true },
      });
      const endEpoch = clock.epochNow() + 10;
      clock.advance(10 - leftMs); // the request waited for a connection: written with < 1 ms left
      const headers = written(dispatched[0]!.headers);
      // Envoy reads 0 as "no timeout": its own router writes 1 for less than a millisecond.
      expect(headers['x-envoy-expected-rq-timeout-ms'], `${leftMs} ms left`).toBe('1');
      expect(headers['grpc-timeout'], `${leftMs} ms left`).not.toMatch(/^0[HMSmun]$/);
      expect(headers['grpc-timeout']).toMatch(/^[1-9]\d*[un]$/);
      expect(Number(headers['x-deadline-epoch-ms'])).toBe(Math.floor(endEpoch));
    }
  });

  it('never writes 0 (Envoy\'s "no timeout") in the Envoy header, whatever is left when written (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.double({ min: 0, max: 0.9999, noNaN: true }),
        (deadlineMs, waited) => {
          const { clock, dispatched } = driveCall({ deadlineMs, deadlineHeaders: { envoy: true } });
          clock.advance(deadlineMs * waited); // time spent waiting for a connection before the write
          const value = written(dispatched[0]!.headers)['x-envoy-expected-rq-timeout-ms'];
          expect(value).toMatch(/^[1-9]\d*$/);
          expect(Number(value)).toBeLessThanOrEqual(Math.ceil(deadlineMs * (1 - waited)) + 1);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('writes the same values as Deadline.toHeaders for the same limit and instant', () => {
    for (const deadlineMs of [10, 250, 1_000]) {
      const { clock, dispatched, deadline } = driveCall({
        deadlineMs,
        deadlineHeaders: { epochMs: 'x-my-deadline', grpcTimeout: true, envoy: true },
      });
      clock.advance(deadlineMs / 3);
      expect(written(dispatched[0]!.headers)).toEqual(
        deadline.toHeaders({ epochMs: 'x-my-deadline', grpcTimeout: true, envoy: true }),
      );
    }
  });

  it('writes no deadline header for an endless deadline (as Deadline.toHeaders), never "Infinity"', () => {
    const { dispatched } = driveCall({
      deadlineMs: Number.POSITIVE_INFINITY,
      deadlineHeaders: { grpcTimeout: true, envoy: true },
    });
    expect(written(dispatched[0]!.headers)).toEqual({});
  });
});
