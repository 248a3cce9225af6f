import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../errors/options.js';
import { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';
import type { HttpClientOptions } from './options.js';
import { resolveHttpClientOptions } from './validate.js';

const problemsOf = (options: unknown): readonly string[] => {
  try {
    resolveHttpClientOptions(options as HttpClientOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return (error as InvalidOptionsError).problems;
  }
  return [];
};

describe('createHttpClient options (validated once, every problem listed)', () => {
  it('applies the defaults: connect 400 ms (SPEC C2), deadline 2000 ms, key header', () => {
    const o = resolveHttpClientOptions({ name: 'inventory', origin: 'http://127.0.0.1:8080' });
    expect(o.origin).toBe('http://127.0.0.1:8080');
    expect(o.connectTimeoutMs).toBe(400);
    expect(o.responseTimeoutMs).toBe(HTTP_DEFAULTS.responseTimeoutMs);
    expect(o.bodyTimeoutMs).toBe(o.responseTimeoutMs);
    expect(o.defaultDeadlineMs).toBe(2000);
    expect(o.idempotencyKeyHeader).toBe('idempotency-key');
    expect(o.autoSelectFamily).toBe(true);
  });

  it('derives the response timeout from p99 as ceil(p99 × 1.4) (SPEC C1)', () => {
    expect(resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 180 }).responseTimeoutMs).toBe(
      252,
    );
    expect(resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 1 }).responseTimeoutMs).toBe(2);
    const explicit = resolveHttpClientOptions({
      name: 'a',
      origin: 'http://h',
      p99Ms: 180,
      responseTimeoutMs: 300,
    });
    expect(explicit.responseTimeoutMs).toBe(300);
  });

  it('lists every problem at once', () => {
    const problems = problemsOf({
      origin: 'ftp://host/path',
      p99Ms: -1,
      connectTimeoutMs: 0,
      responseTimeoutMs: Number.NaN,
      attempts: 1.5,
      deadlineHeaders: { epochMs: 'bad header' },
      conectTimeoutMs: 100,
      clock: {},
    });
    expect(problems.join('\n')).toMatchInlineSnapshot(`
      "unknown option \`conectTimeoutMs\`
      \`name\` is required (the dependency name, for errors and metrics)
      \`origin\` must use http: or https:, got ftp:
      \`origin\` must have no path, query or fragment (pass paths to \`request\`)
      \`p99Ms\` must be a finite number in (0, 2147483647], got -1
      \`attempts\` must be an integer in [1, 10], got 1.5
      \`connectTimeoutMs\` must be a finite number in (0, 60000], got 0
      \`responseTimeoutMs\` must be a finite number in (0, 2147483647], got NaN
      \`deadlineHeaders.epochMs\` must be a valid header name, got "bad header"
      \`clock\` must implement Clock (now, epochNow, setTimer, clearTimer)"
    `);
  });

  it('refuses a non-object and a missing origin with a clear message', () => {
    expect(problemsOf(undefined)).toContain('options must be an object with at least `name` and `origin`');
    expect(problemsOf({ name: 'x' })).toContain(
      '`origin` must be an http(s) URL such as "http://127.0.0.1:8080"',
    );
  });

  it('never throws anything but InvalidOptionsError, and valid numbers land in range (property)', () => {
    const anyValue = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.string(),
      fc.boolean(),
      fc.constant(undefined),
      fc.constant(null),
    );
    fc.assert(
      fc.property(
        fc.record({
          name: anyValue,
          origin: fc.oneof(anyValue, fc.webUrl()),
          p99Ms: anyValue,
          connectTimeoutMs: anyValue,
          responseTimeoutMs: anyValue,
          bodyTimeoutMs: anyValue,
          defaultDeadlineMs: anyValue,
          attempts: anyValue,
        }),
        (raw) => {
          try {
            const o = resolveHttpClientOptions(raw as unknown as HttpClientOptions);
            for (const ms of [
              o.connectTimeoutMs,
              o.responseTimeoutMs,
              o.bodyTimeoutMs,
              o.defaultDeadlineMs,
            ]) {
              expect(ms > 0 && ms <= HTTP_LIMITS.maxMs).toBe(true);
            }
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidOptionsError);
          }
        },
      ),
    );
  });
});
