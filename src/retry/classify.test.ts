import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RetryBudgetExhaustedError } from '../errors/budget.js';
import { DeadlineExceededError, DeadlineInsufficientError } from '../errors/deadline.js';
import { BodyTimeoutError, ConnectTimeoutError, ResponseTimeoutError } from '../errors/timeout.js';
import { classifyFailure, isRetryable, markResponseStarted } from './classify.js';

const coded = (code: string): Error => Object.assign(new Error(code), { code });
const timing = { dependency: 'inventory', elapsedMs: 10, timeoutMs: 10 };

describe('isRetryable (SPEC R2, R4)', () => {
  it('retries 408, 429, 500, 502, 503, 504 and nothing else', () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), fc.boolean(), (status, useStatusCode) => {
        const response = useStatusCode ? { statusCode: status } : { status };
        expect(isRetryable(response)).toBe([408, 429, 500, 502, 503, 504].includes(status));
      }),
    );
  });

  it('never retries a deliberate refusal about the content', () => {
    for (const status of [400, 401, 403, 404, 409, 410, 422]) expect(isRetryable({ status })).toBe(false);
  });

  it('retries connect failures at once', () => {
    for (const code of [
      'ECONNREFUSED',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'EAI_AGAIN',
      'UND_ERR_CONNECT_TIMEOUT',
    ]) {
      expect(classifyFailure(coded(code)), code).toMatchObject({
        retryable: true,
        immediate: true,
        kind: 'connect',
      });
    }
    expect(classifyFailure(new ConnectTimeoutError(timing))).toMatchObject({
      retryable: true,
      immediate: true,
    });
  });

  it('retries a reset before any response byte, with backoff, but not after one', () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']) {
      expect(classifyFailure(coded(code)), code).toMatchObject({ retryable: true, immediate: false });
      expect(isRetryable(markResponseStarted(coded(code))), code).toBe(false);
    }
  });

  it('does not retry a response timeout unless asked (the server has the work)', () => {
    for (const error of [
      new ResponseTimeoutError(timing),
      new BodyTimeoutError(timing),
      coded('UND_ERR_HEADERS_TIMEOUT'),
      coded('UND_ERR_BODY_TIMEOUT'),
    ]) {
      expect(isRetryable(error)).toBe(false);
      expect(isRetryable(error, { retryResponseTimeout: true })).toBe(true);
    }
  });

  it('never retries deadline errors, an exhausted budget, aborts, ENOTFOUND or the unknown', () => {
    const cases: unknown[] = [
      new DeadlineExceededError(),
      new DeadlineInsufficientError({ dependency: 'x', remainingMs: 1, neededMs: 2 }),
      new RetryBudgetExhaustedError({
        dependency: 'x',
        originals: 1,
        extras: 1,
        cause: coded('ECONNREFUSED'),
      }),
      new DOMException('aborted', 'AbortError'),
      coded('UND_ERR_ABORTED'),
      coded('ENOTFOUND'),
      new Error('boom'),
      null,
      undefined,
      'ECONNREFUSED',
      503,
      { status: 'x' },
      { status: 503.5 },
    ];
    for (const failure of cases) expect(isRetryable(failure, { retryResponseTimeout: true })).toBe(false);
  });

  it('follows cause chains (fetch failed → socket error) and aggregate connect errors', () => {
    const fetchFailed = new TypeError('fetch failed', { cause: coded('ECONNREFUSED') });
    expect(classifyFailure(fetchFailed)).toMatchObject({ retryable: true, immediate: true });
    const both = new AggregateError([coded('ECONNREFUSED'), coded('EHOSTUNREACH')]);
    expect(classifyFailure(both)).toMatchObject({ retryable: true, immediate: true });
    expect(isRetryable(new AggregateError([coded('ECONNREFUSED'), new Error('x')]))).toBe(false);
    expect(isRetryable(new AggregateError([]))).toBe(false);
  });

  it('bounds the cause chain it follows', () => {
    let error: Error = coded('ECONNREFUSED');
    for (let i = 0; i < 10; i += 1) error = new Error('wrap', { cause: error });
    expect(isRetryable(error)).toBe(false);
    const loop: { cause?: unknown } = {};
    loop.cause = loop;
    expect(isRetryable(loop)).toBe(false);
  });

  it('reads Retry-After from a 429/503 error, against the clock it is given or the system clock (#14)', () => {
    const error = Object.assign(new Error('busy'), { statusCode: 429, headers: { 'retry-after': '2' } });
    expect(classifyFailure(error, { nowEpochMs: 0 })).toMatchObject({ retryable: true, retryAfterMs: 2_000 });
    // Before: undefined without nowEpochMs, though delay-seconds need no clock at all.
    expect(classifyFailure({ statusCode: 429, headers: { 'retry-after': '1' } }).retryAfterMs).toBe(1_000);
    expect(classifyFailure(error).retryAfterMs).toBe(2_000);
    const date = new Date(Date.now() + 10_000).toUTCString(); // whole seconds: 9-10 s ahead
    const wait = classifyFailure({ status: 503, headers: { 'retry-after': date } }).retryAfterMs!;
    expect(wait).toBeGreaterThan(5_000);
    expect(wait).toBeLessThanOrEqual(10_000);
  });

  it('rejects a misspelt option with the name it was meant to be (#14)', () => {
    expect(() => classifyFailure(new Error('x'), { nowEpochMS: 0 } as never)).toThrow(
      /unknown option `nowEpochMS`; did you mean `nowEpochMs`\?/,
    );
    expect(() => isRetryable(new Error('x'), { retryResponseTimeouts: true } as never)).toThrow(
      /did you mean `retryResponseTimeout`/,
    );
  });

  it('retries gRPC UNAVAILABLE only', () => {
    expect(isRetryable({ code: 14, details: 'down', metadata: {} })).toBe(true);
    expect(isRetryable({ code: 4, details: 'deadline', metadata: {} })).toBe(false);
    expect(isRetryable({ code: 14 })).toBe(false);
  });

  it('never throws on hostile input', () => {
    const hostile = new Proxy({}, { get: () => ({ status: 503 }) });
    expect(() => isRetryable(hostile)).not.toThrow();
    fc.assert(fc.property(fc.anything(), (x) => typeof isRetryable(x) === 'boolean'));
  });
});
