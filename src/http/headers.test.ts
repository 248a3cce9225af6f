import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { appendCallerHeaders, ownedDeadlineNames } from './headers.js';

const DROPPED = ownedDeadlineNames({});

describe('outgoing headers', () => {
  it('owns the configured deadline headers (SPEC D1, D8)', () => {
    expect(DROPPED).toEqual(['x-deadline-epoch-ms']);
    expect(ownedDeadlineNames({ epochMs: false, grpcTimeout: true, envoy: true })).toEqual([
      'grpc-timeout',
      'x-envoy-expected-rq-timeout-ms',
    ]);
  });

  it('accepts every shape undici accepts, drops a caller deadline header, takes the key out', () => {
    const shapes = [
      { a: '1', 'X-Deadline-Epoch-Ms': '5', 'Idempotency-Key': 'k1', skip: undefined },
      ['a', '1', 'x-deadline-epoch-ms', '5', 'idempotency-key', 'k1'],
      [
        ['a', '1'],
        ['x-deadline-epoch-ms', '5'],
        ['idempotency-key', 'k1'],
      ],
      new Map([
        ['a', '1'],
        ['x-deadline-epoch-ms', '5'],
        ['idempotency-key', 'k1'],
      ]),
      new Headers({ a: '1', 'x-deadline-epoch-ms': '5', 'idempotency-key': 'k1' }),
    ];
    for (const shape of shapes) {
      const out: string[] = [];
      const key = appendCallerHeaders(out, shape as never, DROPPED, 'idempotency-key');
      expect(key).toBe('k1');
      expect(out.map((x) => x.toLowerCase())).toEqual(['a', '1']);
    }
  });

  it('repeats multi-valued headers', () => {
    const out: string[] = [];
    appendCallerHeaders(out, { accept: ['a', 'b'] }, DROPPED, 'idempotency-key');
    expect(out).toEqual(['accept', 'a', 'accept', 'b']);
  });

  it('keeps every header but the owned ones, as flat pairs (property)', () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
    fc.assert(
      fc.property(fc.dictionary(name, fc.string({ maxLength: 20 })), (record) => {
        const out: string[] = [];
        appendCallerHeaders(out, record, DROPPED, 'idempotency-key');
        expect(out.length % 2).toBe(0);
        const owned = ['x-deadline-epoch-ms', 'idempotency-key'];
        const kept = Object.entries(record).filter(([k]) => !owned.includes(k));
        expect(out).toEqual(kept.flat());
      }),
    );
  });

  it('ignores null, undefined and a lone trailing name', () => {
    const out: string[] = [];
    expect(appendCallerHeaders(out, null, DROPPED, 'idempotency-key')).toBeUndefined();
    expect(appendCallerHeaders(out, undefined, DROPPED, 'idempotency-key')).toBeUndefined();
    appendCallerHeaders(out, ['a', '1', 'dangling'], DROPPED, 'idempotency-key');
    expect(out).toEqual(['a', '1']);
  });
});
