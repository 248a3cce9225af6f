import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../errors/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { createHttpClient } from './client.js';
import { HTTP_LIMITS } from './constants.js';
import { interceptor } from './interceptor.js';
import type { HttpClientOptions, HttpDependencyOptions } from './options.js';
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
  it('applies the defaults: connect min(400, attempt timeout / 2) (SPEC C2), deadline 2000 ms', () => {
    const o = resolveHttpClientOptions({ name: 'inventory', origin: 'http://127.0.0.1:8080', p99Ms: 500 });
    expect(o.origin).toBe('http://127.0.0.1:8080');
    expect(o.connectTimeoutMs).toBe(350);
    const slow = resolveHttpClientOptions({ name: 'slow', origin: 'http://127.0.0.1:8080', p99Ms: 5_000 });
    expect(slow.connectTimeoutMs).toBe(400);
    expect(o.responseTimeoutMs).toBe(700);
    expect(o.bodyTimeoutMs).toBe(o.responseTimeoutMs);
    expect(o.defaultDeadlineMs).toBe(2000);
    expect(o.autoSelectFamily).toBe(true);
    expect(o.dependency.name).toBe('inventory');
  });

  it('derives the response timeout from p99 as ceil(p99 × slack) and lets it only tighten (SPEC C1)', () => {
    const at = (extra: object) =>
      resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 180, ...extra });
    expect(at({}).responseTimeoutMs).toBe(252);
    expect(at({}).connectTimeoutMs).toBe(126); // half the attempt: strictly before its timer (SPEC R4)
    expect(at({ slack: 1.5 }).responseTimeoutMs).toBe(270);
    expect(at({ responseTimeoutMs: 200 }).responseTimeoutMs).toBe(200);
    expect(problemsOf({ name: 'a', origin: 'http://h', p99Ms: 180, responseTimeoutMs: 300 })).toEqual([
      '`responseTimeoutMs` (300) exceeds the attempt timeout ceil(p99 × slack) = 252 ms; raise `p99Ms` or `slack` instead',
    ]);
  });

  it("reads deadlineHeaders with the deadline's own declaration: a misspelt key is refused, not ignored (#25 item 2)", () => {
    const base = { name: 'a', origin: 'http://h', p99Ms: 50 };
    expect(problemsOf({ ...base, deadlineHeaders: { grpcTimeOut: true } })).toEqual([
      'unknown option `deadlineHeaders.grpcTimeOut`; did you mean `grpcTimeout`?',
    ]);
    expect(() => interceptor({ deadlineHeaders: { envoi: true } as never })).toThrow(/did you mean `envoy`/);
    expect(() =>
      interceptor({
        dependencies: { 'http://h': { ...base, deadlineHeaders: { epochMS: 'x-d' } as never } },
      }),
    ).toThrow(/did you mean `epochMs`/);
    const o = resolveHttpClientOptions({ ...base, deadlineHeaders: { epochMs: 'X-Deadline', envoy: true } });
    expect(o.deadlineHeaders).toEqual({ epochMs: 'x-deadline', grpcTimeout: false, envoy: true });
  });

  it('runs through a given executor, and refuses its options next to it', () => {
    const dependency = resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 100 }).dependency;
    expect(resolveHttpClientOptions({ origin: 'http://h', dependency } as never).dependency).toBe(dependency);
    expect(problemsOf({ origin: 'http://h', dependency, p99Ms: 5, hedge: true, name: 'b' })).toEqual([
      '`dependency` is given: configure p99Ms, hedge on it, not here',
      "`name` (b) differs from the dependency's (a)",
    ]);
  });

  it('says at compile time that p99Ms is needed unless a dependency is given (npx tsc --noEmit; #26 item 3)', () => {
    const dependency = resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 100 }).dependency;
    const own: HttpClientOptions = { name: 'a', origin: 'http://h', p99Ms: 100, hedge: true };
    const shared: HttpClientOptions = { name: 'a', origin: 'http://h', dependency };
    // @ts-expect-error neither `p99Ms` nor a `dependency`: the executor has nothing to plan with
    const neither: HttpClientOptions = { name: 'a', origin: 'http://h', attempts: 2 };
    // @ts-expect-error a given executor's options are its own, not the client's
    const beside: HttpClientOptions = { name: 'a', origin: 'http://h', dependency, hedge: true };
    // @ts-expect-error an interceptor's entry says the same
    const entry: HttpDependencyOptions = { name: 'a', hedge: true };
    const sharedEntry: HttpDependencyOptions = { name: 'a', dependency };
    expect(problemsOf(own)).toEqual([]);
    expect(problemsOf(shared)).toEqual([]);
    expect(problemsOf({ ...sharedEntry, origin: 'http://h' })).toEqual([]);
    expect(problemsOf(neither).join('\n')).toMatch(/p99Ms/);
    expect(problemsOf(beside)).toEqual(['`dependency` is given: configure hedge on it, not here']);
    expect(problemsOf({ ...entry, origin: 'http://h' }).join('\n')).toMatch(/p99Ms/);
  });

  it('live calibration needs recorder options and its own executor', () => {
    const recorder = createLatencyRecorder();
    const dependency = resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms: 100 }).dependency;
    expect(problemsOf({ name: 'a', origin: 'http://h', p99Ms: 100, recorder, live: true })).toEqual([
      '`live` needs recorder options, not a recorder: it listens to every window that closes',
    ]);
    expect(problemsOf({ origin: 'http://h', dependency, live: true })).toEqual([
      '`dependency` is given: configure live on it, not here',
    ]);
    const o = resolveHttpClientOptions({
      name: 'a',
      origin: 'http://h',
      p99Ms: 100,
      live: { maxP99Ms: 300 },
    });
    expect([o.live?.p99.minP99Ms, o.live?.p99.maxP99Ms]).toEqual([50, 300]);
  });

  it('lists every problem at once', () => {
    const problems = problemsOf({
      origin: 'ftp://host/path',
      p99Ms: -1,
      connectTimeoutMs: 0,
      responseTimeoutMs: Number.NaN,
      attempts: 1.5,
      hedge: { percentile: 2 },
      deadlineHeaders: { epochMs: 'bad header' },
      conectTimeoutMs: 100,
      clock: {},
    });
    expect(problems.join('\n')).toMatchInlineSnapshot(`
      "unknown option \`conectTimeoutMs\`; did you mean \`connectTimeoutMs\`?
      \`origin\` must use http: or https:, got ftp:
      \`origin\` must have no path, query or fragment (pass paths to \`request\`)
      \`deadlineHeaders.epochMs\` must be a header name (RFC 9110 token) or false
      \`clock\` must implement Clock (now, epochNow, setTimer, clearTimer)
      \`name\` is required
      \`p99Ms\` must be a finite number in (0, 86400000], got -1
      \`attempts\` must be an integer in [1, 10], got 1.5
      \`hedge.percentile\` must be a finite number in [0.5, 0.9999], got 2
      \`connectTimeoutMs\` must be a finite number in (0, 60000], got 0
      \`responseTimeoutMs\` must be a finite number in (0, 2147483647], got NaN"
    `);
  });

  it('refuses a non-object and a missing origin with a clear message', () => {
    expect(problemsOf(undefined)).toContain('options must be an object with at least `name` and `origin`');
    expect(problemsOf({ name: 'x' })).toContain(
      '`origin` must be an http(s) URL such as "http://127.0.0.1:8080"',
    );
  });

  it('refuses an origin carrying credentials, naming no part of them, as `origins` and the interceptor do (#16)', () => {
    // Before: accepted, and `url.origin` dropped the credentials: every request went out without them.
    const refusal =
      '`origin` must have no credentials (user:password@; send them in a header such as `authorization`)';
    for (const origin of [
      'http://user:secret@127.0.0.1:8080',
      'https://user@h',
      'http://:secret@h',
      new URL('http://user:secret@h'),
    ]) {
      const problems = problemsOf({ name: 'a', origin, p99Ms: 100 });
      expect(problems, String(origin)).toEqual([refusal]);
    }
    expect(() => createHttpClient({ name: 'a', origin: 'http://user:secret@h', p99Ms: 100 })).toThrow(
      InvalidOptionsError,
    );
    // An origin that does not parse is shown, but never its credentials.
    for (const origin of ['http://user:secret@h:99999', '//user:secret@h', 'http://user:se@cret@h:99999']) {
      const problems = problemsOf({ name: 'a', origin, p99Ms: 100 });
      expect(problems, origin).toHaveLength(1);
      expect(problems[0], origin).toMatch(/^`origin` must be an http\(s\) URL, got /);
      expect(problems[0], origin).not.toMatch(/secret|cret/);
    }
    expect(problemsOf({ name: 'a', origin: 'http://user:secret@h:99999', p99Ms: 100 })).toEqual([
      '`origin` must be an http(s) URL, got "http://…@h:99999"',
    ]);
  });

  it('every valid p99 and slack builds a client, its derived connect timeout never above the attempt (property, #24)', () => {
    // Before: p99Ms 0.5 threw INVALID_OPTIONS on its own derived numbers (connect 1 ms is not below a
    // 1 ms attempt), as did every p99 whose attempt rounds to 1 ms.
    expect(problemsOf({ name: 'a', origin: 'http://h', p99Ms: 0.5 })).toEqual([]);
    const client = createHttpClient({ name: 'a', origin: 'http://127.0.0.1:9', p99Ms: 0.5 });
    expect(client.dependency.timeouts).toMatchObject({ connectMs: 1, responseMs: 1 });
    void client.destroy();
    fc.assert(
      fc.property(
        fc.double({ min: Number.MIN_VALUE, max: 86_400_000, noNaN: true }),
        fc.double({ min: 1.3, max: 1.5, noNaN: true }),
        (p99Ms, slack) => {
          const o = resolveHttpClientOptions({ name: 'a', origin: 'http://h', p99Ms, slack });
          expect(o.connectTimeoutMs).toBeLessThanOrEqual(o.responseTimeoutMs);
          if (o.responseTimeoutMs >= 2) expect(o.connectTimeoutMs).toBeLessThan(o.responseTimeoutMs);
        },
      ),
    );
    // A connect timeout given is still held to the rule.
    expect(problemsOf({ name: 'a', origin: 'http://h', p99Ms: 0.5, connectTimeoutMs: 1 })).toHaveLength(1);
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

describe('other libraries’ names on createHttpClient (#27)', () => {
  it('timeout, retries and baseURL get prazo’s concept and why, not just "unknown option"', () => {
    const problems = (extra: Record<string, unknown>): string => {
      try {
        createHttpClient({ name: 'x', origin: 'http://127.0.0.1:9', p99Ms: 50, ...extra } as never);
        return '';
      } catch (error) {
        return String(error);
      }
    };
    expect(problems({ retries: 3 })).toMatch(/unknown option `retries`; did you mean `attempts`\?/);
    expect(problems({ baseURL: 'http://a' })).toMatch(/unknown option `baseURL`; did you mean `origin`\?/);
    expect(problems({ timeout: 500 })).toMatch(/unknown option `timeout`; \S/);
  });
});

describe('a config entry spread into createHttpClient (#27, SPEC C8)', () => {
  it('takes p99Assumed, and live calibration may move an assumed p99 20× by default', () => {
    const http = createHttpClient({ name: 'x', origin: 'http://127.0.0.1:9', p99Ms: 160, p99Assumed: true });
    expect(http.dependency.p99Assumed).toBe(true);
    void http.close();
    const measured = resolveHttpClientOptions({
      name: 'x',
      origin: 'http://127.0.0.1:9',
      p99Ms: 160,
      live: true,
    });
    const assumed = resolveHttpClientOptions({
      name: 'x',
      origin: 'http://127.0.0.1:9',
      p99Ms: 160,
      p99Assumed: true,
      live: true,
    });
    const bounds = (r: unknown) => (r as { live: { p99: { minP99Ms: number; maxP99Ms: number } } }).live.p99;
    expect([bounds(measured).minP99Ms, bounds(measured).maxP99Ms]).toEqual([80, 320]);
    expect([bounds(assumed).minP99Ms, bounds(assumed).maxP99Ms]).toEqual([8, 3_200]);
  });

  it('Was a defect: unknown keys are reported as the options kernel reports them (quoted, cut, at most 20 listed)', () => {
    const base = { name: 'd', origin: 'http://127.0.0.1:1', p99Ms: 50 };
    const many: Record<string, unknown> = { ...base };
    for (let i = 0; i < 5_000; i += 1) many[`k${i}`] = 1;
    const listed = problemsOf(many);
    expect(listed.length).toBeLessThanOrEqual(22);
    expect(listed.join('\n')).toContain('4980 more unknown key(s)');
    const huge = problemsOf({ ...base, ['x'.repeat(1_000_000)]: 1, 'a\nb': 1 });
    expect(huge.every((p) => p.length < 300 && !p.includes('\n'))).toBe(true);
    expect(problemsOf({ ...base, timeout: 5 }).join()).toMatch(/timeout/);
    expect(problemsOf({ ...base, p99ms: 5 }).join()).toContain('did you mean `p99Ms`');
  });
});
