import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import type { PrazoError } from '../errors/base.js';
import { Attempt, type AttemptScope, type UndiciHandler } from './attempt.js';

/**
 * The attempt's phase machine on the fake clock, driven the way undici drives a handler. The real
 * sockets are in client.test.ts; here every instant is exact and every timer is counted.
 */

class Inner implements UndiciHandler {
  readonly events: string[] = [];
  error: Error | undefined;
  resume: (() => void) | undefined;
  more = true;
  onConnect(): void {
    this.events.push('connect');
  }
  onHeaders(status: number, _h: Buffer[], resume: () => void): boolean {
    this.events.push(`headers ${status}`);
    this.resume = resume;
    return true;
  }
  onData(): boolean {
    this.events.push('data');
    return this.more;
  }
  onComplete(): void {
    this.events.push('complete');
  }
  onError(error: Error): void {
    this.events.push(`error ${(error as PrazoError).code ?? error.name}`);
    this.error = error;
  }
}

/** Lets the attempt's deferred body-timer arming (a microtask) run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface SetupOptions {
  deadlineMs?: number;
  attemptMs?: number;
  responseMs?: number;
  bodyMs?: number;
  signal?: AbortSignal;
}

function setup(options: SetupOptions = {}) {
  const clock = new FakeClock();
  const scope: AttemptScope = { name: 'inventory', clock, connectTimeoutMs: 400 };
  const deadline = Deadline.after(options.deadlineMs ?? 1_000, { clock });
  const attempt = new Attempt(
    scope,
    deadline,
    options.attemptMs ?? Number.POSITIVE_INFINITY,
    options.responseMs ?? 100,
    options.bodyMs ?? 100,
    options.signal,
  );
  const inner = new Inner();
  attempt.inner = inner;
  const aborts: unknown[] = [];
  const abort = (reason?: Error): void => {
    aborts.push(reason);
    attempt.onError(reason ?? new Error('aborted')); // what undici's abort does: errorRequest → onError
  };
  return { clock, attempt, inner, aborts, abort };
}

describe('Attempt: one timer per call, phase-split timeouts (SPEC C2, D5, D6)', () => {
  it('fires RESPONSE_TIMEOUT at the response timeout after the request is written', () => {
    const { clock, attempt, inner, aborts, abort } = setup({ responseMs: 100 });
    attempt.onConnect(abort);
    attempt.dispatched();
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(99);
    expect(inner.error).toBeUndefined();
    clock.advance(1);
    expect(aborts).toHaveLength(1);
    expect(inner.error).toMatchObject({ code: 'RESPONSE_TIMEOUT', dependency: 'inventory', timeoutMs: 100 });
    expect((inner.error as unknown as { elapsedMs: number }).elapsedMs).toBe(100);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('bounds the phase by the deadline: DEADLINE_EXCEEDED when the deadline comes first', () => {
    const { clock, attempt, inner, abort } = setup({ deadlineMs: 60, responseMs: 100 });
    attempt.onConnect(abort);
    clock.advance(60);
    expect(inner.error).toMatchObject({ code: 'DEADLINE_EXCEEDED', dependency: 'inventory', elapsedMs: 60 });
  });

  it('settles a request still queued at the deadline at once, and refuses it when a socket frees up', () => {
    const { clock, attempt, inner, aborts, abort } = setup({ deadlineMs: 200 });
    attempt.dispatched();
    clock.advance(200);
    expect(inner.events).toEqual(['error DEADLINE_EXCEEDED']);
    // undici gets to it later: it must never be written. A throwing onConnect makes undici drop it
    // from the queue; abort() would also destroy the connection (client.test.ts checks on sockets).
    expect(() => attempt.onConnect(abort)).toThrow(inner.error);
    expect(aborts).toEqual([]);
    expect(inner.events).toEqual(['error DEADLINE_EXCEEDED']);
  });

  it('re-arms nothing while the body flows, fires BODY_TIMEOUT after a silence', async () => {
    const { clock, attempt, inner, abort } = setup({ deadlineMs: 10_000, responseMs: 100, bodyMs: 100 });
    attempt.onConnect(abort);
    clock.advance(30);
    attempt.onHeaders(200, [], () => {}, 'OK');
    await settle();
    for (let i = 0; i < 10; i += 1) {
      clock.advance(60);
      attempt.onData(Buffer.from('x'));
      expect(clock.pendingTimers()).toBe(1);
    }
    expect(inner.error).toBeUndefined();
    clock.advance(99);
    expect(inner.error).toBeUndefined();
    clock.advance(1);
    expect(inner.error).toMatchObject({ code: 'BODY_TIMEOUT', timeoutMs: 100 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('does not count a paused consumer as a stalled body', async () => {
    const { clock, attempt, inner, abort } = setup({ deadlineMs: 1_000, bodyMs: 100 });
    attempt.onConnect(abort);
    attempt.onHeaders(200, [], () => {}, 'OK');
    await settle();
    inner.more = false;
    attempt.onData(Buffer.from('x')); // the consumer's buffer is full: undici pauses the socket
    clock.advance(500);
    expect(inner.error).toBeUndefined();
    inner.resume?.(); // the consumer reads again: the body clock restarts
    clock.advance(99);
    expect(inner.error).toBeUndefined();
    inner.more = true;
    clock.advance(1);
    expect(inner.error).toMatchObject({ code: 'BODY_TIMEOUT' });
  });

  it('never arms a body timer for a body that completes in the same read', async () => {
    const { clock, attempt, inner, abort } = setup({ responseMs: Number.POSITIVE_INFINITY });
    attempt.onConnect(abort);
    clock.advance(40);
    attempt.onHeaders(503, [], () => {}, 'Service Unavailable');
    attempt.onComplete(null);
    await settle();
    expect(clock.pendingTimers()).toBe(0);
    expect(inner.events).toEqual(['connect', 'headers 503', 'complete']);
  });

  it("mirrors the executor's attempt limit, counted from the attempt's start, queue and connect included", () => {
    const { clock, attempt, inner, abort } = setup({ attemptMs: 140, responseMs: 140 });
    attempt.dispatched();
    expect(clock.pendingTimers()).toBe(1);
    clock.advance(100); // 100 ms waiting for a socket
    attempt.onConnect(abort);
    expect(clock.pendingTimers()).toBe(1); // same bound: not re-armed
    clock.advance(39);
    expect(inner.error).toBeUndefined();
    clock.advance(1);
    expect(inner.error).toMatchObject({ code: 'RESPONSE_TIMEOUT', timeoutMs: 140, elapsedMs: 140 });
  });

  it('follows a signal only when asked, and ends with its reason', () => {
    const { clock, attempt, inner, aborts, abort } = setup();
    attempt.onConnect(abort);
    const racing = new AbortController();
    attempt.follow(racing.signal);
    racing.abort(new DOMException('another attempt of the same call answered first', 'AbortError'));
    expect(inner.error?.name).toBe('AbortError');
    expect(aborts).toHaveLength(1);
    expect(clock.pendingTimers()).toBe(0);
    expect(attempt.done).toBe(true);
  });

  it('a caller (or executor) abort ends the attempt with its reason and clears the timer', () => {
    const controller = new AbortController();
    const { clock, attempt, inner, aborts, abort } = setup({ signal: controller.signal });
    attempt.onConnect(abort);
    controller.abort(new Error('hedge lost'));
    expect(inner.error?.message).toBe('hedge lost');
    expect(aborts).toHaveLength(1); // the socket is destroyed: the request stops for real
    expect(clock.pendingTimers()).toBe(0);
  });

  it("maps undici's own timeouts to prazo's typed errors", () => {
    const cases: Array<[Error, string]> = [
      [new errors.ConnectTimeoutError(), 'CONNECT_TIMEOUT'],
      [new errors.HeadersTimeoutError(), 'RESPONSE_TIMEOUT'],
      [new errors.BodyTimeoutError(), 'BODY_TIMEOUT'],
    ];
    for (const [raw, code] of cases) {
      const { attempt, inner } = setup();
      attempt.onError(raw);
      expect(inner.error).toMatchObject({ code, dependency: 'inventory' });
      expect((inner.error as Error).cause).toBe(raw);
    }
    const { attempt, inner } = setup();
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    attempt.onError(reset);
    expect(inner.error).toBe(reset); // passes through: retry classification reads its code
  });
});
