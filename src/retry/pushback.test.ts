import { Metadata } from '@grpc/grpc-js';
import fc from 'fast-check';
import { Headers } from 'undici';
import { describe, expect, it } from 'vitest';
import { DeadlineExceededError } from '../errors/deadline.js';
import { InvalidOptionsError } from '../errors/options.js';
import { ThrottledError } from '../errors/throttle.js';
import { ConnectFailedError } from '../errors/timeout.js';
import { classifyFailure } from './classify.js';
import { dependencyFailureOf, markDependencyFailure, parsePushback, readPushback, STOP } from './pushback.js';

/**
 * `grpc-retry-pushback-ms` as gRPC's retry design (A6, "Pushback") defines it: an ASCII signed 32-bit
 * integer without unnecessary leading zeros; negative or unparseable means "do not retry" (SPEC X6).
 */
describe('parsePushback (gRPC A6)', () => {
  it('a non-negative integer is a wait in ms; a negative one or anything unparseable is "do not retry"', () => {
    expect(parsePushback('0')).toEqual({ retry: true, afterMs: 0 });
    expect(parsePushback('250')).toEqual({ retry: true, afterMs: 250 });
    expect(parsePushback('2147483647')).toEqual({ retry: true, afterMs: 2_147_483_647 });
    expect(parsePushback(' 250\t')).toEqual({ retry: true, afterMs: 250 }); // OWS around a field value
    for (const stop of [
      '-1',
      '-2147483648',
      '-7',
      '2147483648',
      '007',
      '-0',
      '1.5',
      '1e3',
      '+5',
      '',
      ' ',
      'abc',
      '0x10',
      '１',
      '99999999999999999',
    ]) {
      expect(parsePushback(stop), JSON.stringify(stop)).toBe(STOP);
    }
    expect(parsePushback(undefined)).toBeUndefined();
    expect(parsePushback(null)).toBeUndefined();
    expect(parsePushback(42)).toBe(STOP); // not a header value
  });

  it('property: never throws, a valid value round-trips, every other string stops (bounded input)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (n) => {
        expect(parsePushback(String(n))).toEqual({ retry: true, afterMs: n });
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: -1 }), (n) => {
        expect(parsePushback(String(n))).toBe(STOP);
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        const got = parsePushback(s);
        const t = s.trim();
        const valid = /^(0|[1-9]\d*)$/.test(t) && Number(t) <= 2 ** 31 - 1 && s.length <= 16;
        expect(got).toEqual(valid ? { retry: true, afterMs: Number(t) } : STOP);
      }),
    );
    const huge = '1'.repeat(1_000_000);
    const t0 = performance.now();
    expect(parsePushback(huge)).toBe(STOP);
    expect(performance.now() - t0).toBeLessThan(50);
  });
});

describe('readPushback: HTTP headers and gRPC metadata alike', () => {
  it('reads undici/Node records, fetch Headers and grpc-js Metadata; the first value of a list', () => {
    expect(readPushback({ 'grpc-retry-pushback-ms': '-1' })).toBe(STOP);
    expect(readPushback({ 'grpc-retry-pushback-ms': ['100', '-1'] })).toEqual({ retry: true, afterMs: 100 });
    expect(readPushback({ 'grpc-retry-pushback-ms': [] })).toBeUndefined();
    expect(readPushback({ other: '1' })).toBeUndefined();
    expect(readPushback(new Headers({ 'grpc-retry-pushback-ms': '-1' }))).toBe(STOP);
    expect(readPushback(new Headers())).toBeUndefined();
    const metadata = new Metadata();
    metadata.set('grpc-retry-pushback-ms', '-1');
    expect(readPushback(metadata)).toBe(STOP);
    expect(readPushback(new Metadata())).toBeUndefined();
    expect(readPushback(undefined)).toBeUndefined();
    expect(readPushback('grpc-retry-pushback-ms: -1')).toBeUndefined();
  });

  it('a repeated header joined by fetch ("100, -1") is not one integer: do not retry', () => {
    const headers = new Headers();
    headers.append('grpc-retry-pushback-ms', '100');
    headers.append('grpc-retry-pushback-ms', '-1');
    expect(readPushback(headers)).toBe(STOP);
  });
});

describe('classifyFailure honours a failure’s own pushback (SPEC X6)', () => {
  const grpcError = (code: number, pushback?: string) => {
    const metadata = new Metadata();
    if (pushback !== undefined) metadata.set('grpc-retry-pushback-ms', pushback);
    return Object.assign(new Error(`${code}`), { code, details: '', metadata });
  };

  it('a gRPC UNAVAILABLE with pushback -1 is not retried, marked pushback; without it, it is', () => {
    expect(classifyFailure(grpcError(14, '-1'))).toEqual({
      retryable: false,
      immediate: false,
      kind: 'pushback',
      pushback: true,
    });
    expect(classifyFailure(grpcError(14, 'soon'))).toMatchObject({ retryable: false, pushback: true });
    expect(classifyFailure(grpcError(14))).toMatchObject({ retryable: true, kind: 'connection-lost' });
    expect(classifyFailure(grpcError(14, '300'))).toMatchObject({ retryable: true, retryAfterMs: 300 });
    expect(classifyFailure(grpcError(14, '-1'), { pushback: false })).toMatchObject({ retryable: true });
  });

  it('an HTTP error with a failed status and pushback -1 stops; a 4xx or a 200 is not a pushback', () => {
    const httpError = (statusCode: number, headers: Record<string, string>) =>
      Object.assign(new Error(String(statusCode)), { statusCode, headers });
    expect(classifyFailure(httpError(503, { 'grpc-retry-pushback-ms': '-1' }))).toMatchObject({
      retryable: false,
      kind: 'pushback',
      pushback: true,
      status: 503,
    });
    expect(classifyFailure(httpError(500, { 'grpc-retry-pushback-ms': '40' }))).toMatchObject({
      retryable: true,
      retryAfterMs: 40,
    });
    // The pushback's wait comes before Retry-After (both are the server's; it is in ms).
    expect(
      classifyFailure(httpError(503, { 'grpc-retry-pushback-ms': '40', 'retry-after': '9' }), {
        nowEpochMs: 0,
      }),
    ).toMatchObject({ retryAfterMs: 40 });
    expect(classifyFailure(httpError(404, { 'grpc-retry-pushback-ms': '-1' }))).toMatchObject({
      retryable: false,
      kind: 'status',
    });
    expect(classifyFailure(httpError(404, { 'grpc-retry-pushback-ms': '-1' })).pushback).toBeUndefined();
  });
});

/**
 * A handler that tried several replicas with `Promise.any` and lost every one throws an
 * AggregateError: when each of its errors is a dependency's failure, so is the whole (SPEC X6), and
 * the server pushes back instead of answering 500 (test/reliability/attacks/server.test.ts).
 */
describe('dependencyFailureOf: an AggregateError of dependency failures (Promise.any over replicas)', () => {
  const throttled = (): ThrottledError =>
    new ThrottledError({
      dependency: 'replica-a',
      requests: 20,
      accepts: 0,
      probability: 0.9,
      windowMs: 1_000,
    });
  const refused = (): ConnectFailedError =>
    new ConnectFailedError({
      dependency: 'replica-b',
      elapsedMs: 1,
      cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
    });
  const exceeded = (): DeadlineExceededError => new DeadlineExceededError({ dependency: 'replica-c' });
  const marked = (): Error =>
    markDependencyFailure(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), 'replica-d');

  it('all refused: unavailable, the first one', () => {
    const first = throttled();
    const failure = dependencyFailureOf(new AggregateError([first, refused(), marked()]));
    expect(failure?.kind).toBe('unavailable');
    expect(failure?.error).toBe(first);
  });

  it('any of them a timeout: timeout, the first timeout (its code and status agree)', () => {
    const late = exceeded();
    const failure = dependencyFailureOf(new AggregateError([throttled(), late, refused()]));
    expect(failure?.kind).toBe('timeout');
    expect(failure?.error).toBe(late);
  });

  it('found inside a cause chain, and nested', () => {
    const wrapped = new Error('checkout failed', { cause: new AggregateError([refused(), throttled()]) });
    expect(dependencyFailureOf(wrapped)?.kind).toBe('unavailable');
    const nested = new AggregateError([new AggregateError([refused()]), exceeded()]);
    expect(dependencyFailureOf(nested)?.kind).toBe('timeout');
  });

  it('not when any error is not a dependency failure (a bug, a plain error), nor when there is none', () => {
    expect(dependencyFailureOf(new AggregateError([refused(), new Error('bug')]))).toBeUndefined();
    expect(
      dependencyFailureOf(new AggregateError([refused(), new InvalidOptionsError('x', ['bad'])])),
    ).toBeUndefined();
    expect(dependencyFailureOf(new AggregateError([refused(), null]))).toBeUndefined();
    expect(dependencyFailureOf(new AggregateError([]))).toBeUndefined();
    // its own cause is still read, as before
    const caused = new AggregateError([new Error('bug')], 'lost', { cause: refused() });
    expect(dependencyFailureOf(caused)?.kind).toBe('unavailable');
  });

  it('bounded: nesting deeper than the cause chain is followed is not read', () => {
    let deep: unknown = refused();
    for (let i = 0; i < 10; i += 1) deep = new AggregateError([deep]);
    expect(dependencyFailureOf(deep)).toBeUndefined();
  });

  /** Aggregates `depth` levels deep, each listing the level below `fan` times: one object per level. */
  const shared = (depth: number, fan: number, leaf: unknown, reads: { n: number }): unknown => {
    let level = leaf;
    for (let i = 0; i < depth; i += 1) {
      const errors = Array.from({ length: fan }, () => level);
      level = Object.defineProperty(new AggregateError([]), 'errors', {
        get: () => {
          reads.n += 1;
          return errors;
        },
      });
    }
    return level;
  };

  it('bounded work: an aggregate listed again at each level is read once, with the same verdict', () => {
    // Read again at every mention, 4 levels of 10 cost 1 + 10 + 100 + 1,000 reads (of 1,000: 10¹²).
    const reads = { n: 0 };
    const late = exceeded();
    const failure = dependencyFailureOf(shared(4, 10, late, reads));
    expect(failure?.kind).toBe('timeout');
    expect(failure?.error).toBe(late);
    expect(reads.n).toBe(4);
    // Deeper than the cause chain is followed: none, as before, reading the first 5 levels at most.
    reads.n = 0;
    expect(dependencyFailureOf(shared(30, 3, late, reads))).toBeUndefined();
    expect(reads.n).toBeLessThanOrEqual(5);
  });

  it('bounded work: past 1,000 errors met in one walk (the aggregate included), none', () => {
    const many = (n: number) => new AggregateError(Array.from({ length: n }, () => refused()));
    expect(dependencyFailureOf(many(999))?.kind).toBe('unavailable');
    expect(dependencyFailureOf(many(1_000))).toBeUndefined();
    // Repeats count: 4 levels of 1,000 mentions of one object each is 4,001 met.
    expect(dependencyFailureOf(shared(4, 1_000, exceeded(), { n: 0 }))).toBeUndefined();
  });

  it('property: an error shared between lists and cause chains reads as its unshared copy does', () => {
    const leaves = {
      throttled,
      refused,
      exceeded,
      marked,
      plain: () => new Error('plain'),
      bug: () => new InvalidOptionsError('x', ['bad']),
    };
    type Shape =
      | { leaf: keyof typeof leaves }
      | { all: number[]; cause?: number | undefined }
      | { wraps: number };
    // Node i refers only to nodes before it: a DAG, each node reachable from the last by many paths.
    const shape: fc.Arbitrary<Shape> = fc.oneof(
      fc.record({
        leaf: fc.constantFrom<keyof typeof leaves>(
          'throttled',
          'refused',
          'exceeded',
          'marked',
          'plain',
          'bug',
        ),
      }),
      fc.record({
        all: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        cause: fc.option(fc.nat(), { nil: undefined }),
      }),
      fc.record({ wraps: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(shape, { minLength: 1, maxLength: 10 }), (shapes) => {
        const leafOf = new Map<number, unknown>();
        // Mostly the node just before: chains deeper than the 4 levels followed, met at several levels.
        const ref = (i: number, n: number) => (i === 0 ? -1 : i - 1 - (n % Math.min(i, 3)));
        /** Node `i`: built once (`memo`) or afresh at every mention; leaves are always the same objects. */
        const build = (i: number, memo: Map<number, unknown> | undefined): unknown => {
          if (i < 0) return new Error('nothing below');
          const known = memo?.get(i);
          if (known !== undefined) return known;
          const s = shapes[i]!;
          let made: unknown;
          if ('leaf' in s) {
            made = leafOf.get(i) ?? leaves[s.leaf]();
            leafOf.set(i, made);
          } else if ('wraps' in s) made = new Error('wrapped', { cause: build(ref(i, s.wraps), memo) });
          else {
            const errors = s.all.map((n) => build(ref(i, n), memo));
            made =
              s.cause === undefined
                ? new AggregateError(errors)
                : new AggregateError(errors, 'lost', { cause: build(ref(i, s.cause), memo) });
          }
          memo?.set(i, made);
          return made;
        };
        const top = shapes.length - 1;
        const once = dependencyFailureOf(build(top, new Map()));
        const copied = dependencyFailureOf(build(top, undefined));
        expect(once?.kind).toBe(copied?.kind);
        expect(once?.error.message).toBe(copied?.error.message);
      }),
      { numRuns: 1_000 },
    );
  });

  it('property: a failure exactly when every error is one; timeout exactly when any is', () => {
    const kinds = ['throttled', 'refused', 'exceeded', 'marked', 'plain', 'bug'] as const;
    const make = {
      throttled,
      refused,
      exceeded,
      marked,
      plain: () => new Error('plain'),
      bug: () => new InvalidOptionsError('x', ['bad']),
    };
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 8 }), (picked) => {
        const failure = dependencyFailureOf(new AggregateError(picked.map((k) => make[k]())));
        const all = picked.every((k) => k !== 'plain' && k !== 'bug');
        expect(failure !== undefined).toBe(all);
        if (failure !== undefined) expect(failure.kind === 'timeout').toBe(picked.includes('exceeded'));
      }),
    );
  });
});
