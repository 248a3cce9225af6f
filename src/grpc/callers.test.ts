import { Metadata } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { callersLeftMs, channelDeadline, GRPC_DEADLINE_REACH_MS } from './deadline.js';

/**
 * `callersLeftMs`: the caller's own deadline metadata as prazo/grpc reads it (SPEC D1, D3, D5, D8),
 * which both paths make the call's limit (the thin path's channel deadline, the executor's `ceiling`).
 */

const EPOCH = 1_800_000_000_000;
const DEFAULT = {};

function metadataOf(...pairs: Array<readonly [string, string]>): Metadata {
  const metadata = new Metadata();
  for (const [name, value] of pairs) metadata.add(name, value);
  return metadata;
}

describe('callersLeftMs', () => {
  it('reads x-deadline-epoch-ms and a grpc-timeout key, the earliest of every value (SPEC D1, D5)', () => {
    expect(callersLeftMs(metadataOf(['x-deadline-epoch-ms', String(EPOCH + 400)]), DEFAULT, EPOCH)).toBe(400);
    expect(callersLeftMs(metadataOf(['grpc-timeout', '250m']), DEFAULT, EPOCH)).toBe(250);
    expect(callersLeftMs(metadataOf(['grpc-timeout', '2S']), DEFAULT, EPOCH)).toBe(2_000);
    const both = metadataOf(
      ['x-deadline-epoch-ms', String(EPOCH + 900)],
      ['x-deadline-epoch-ms', String(EPOCH + 300)],
      ['grpc-timeout', '500m'],
    );
    expect(callersLeftMs(both, DEFAULT, EPOCH)).toBe(300);
    expect(callersLeftMs(new Metadata(), DEFAULT, EPOCH)).toBe(Number.POSITIVE_INFINITY);
  });

  it('a deadline already gone is negative: the call is refused (D4), never given time', () => {
    expect(callersLeftMs(metadataOf(['x-deadline-epoch-ms', '123']), DEFAULT, EPOCH)).toBe(123 - EPOCH);
    expect(callersLeftMs(metadataOf(['grpc-timeout', '0m']), DEFAULT, EPOCH)).toBe(0);
  });

  it("reads the names its format writes: another absolute name, Envoy's when written (SPEC D8)", () => {
    const metadata = metadataOf(
      ['x-my-deadline', String(EPOCH + 200)],
      ['x-envoy-expected-rq-timeout-ms', '100'],
    );
    expect(callersLeftMs(metadata, DEFAULT, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    expect(callersLeftMs(metadata, { epochMs: 'x-my-deadline' }, EPOCH)).toBe(200);
    expect(callersLeftMs(metadata, { epochMs: 'x-my-deadline', envoy: true }, EPOCH)).toBe(100);
    // The standard name is read whatever the format writes: a caller's own deadline all the same.
    const standard = metadataOf(['x-deadline-epoch-ms', String(EPOCH + 50)]);
    expect(callersLeftMs(standard, { epochMs: false }, EPOCH)).toBe(50);
    // Envoy's 0 is its "no timeout", not an expired call.
    const none = metadataOf(['x-envoy-expected-rq-timeout-ms', '0']);
    expect(callersLeftMs(none, { envoy: true }, EPOCH)).toBe(Number.POSITIVE_INFINITY);
  });

  it('ignores garbage: never NaN, never a deadline (SPEC D3)', () => {
    const junk = [
      '',
      'soon',
      '-5',
      '1e3',
      '0x10',
      '12.5',
      ' 1 2',
      'NaN',
      'Infinity',
      '9'.repeat(40),
      `${EPOCH + 5}, 1`,
    ];
    for (const value of junk) {
      const metadata = metadataOf(
        ['x-deadline-epoch-ms', value],
        ['grpc-timeout', value],
        ['x-envoy-expected-rq-timeout-ms', value],
      );
      expect(callersLeftMs(metadata, { envoy: true }, EPOCH), value).toBe(Number.POSITIVE_INFINITY);
    }
    // A valid value beside garbage still counts.
    const mixed = metadataOf(['x-deadline-epoch-ms', 'garbage'], ['x-deadline-epoch-ms', String(EPOCH + 70)]);
    expect(callersLeftMs(mixed, DEFAULT, EPOCH)).toBe(70);
  });

  it('ignores a limit further than a timer can hold: a grpc-js deadline that far would throw or fire at once', () => {
    const at = (ms: number) => metadataOf(['x-deadline-epoch-ms', String(EPOCH + ms)]);
    expect(callersLeftMs(at(MAX_TIMER_DELAY_MS), DEFAULT, EPOCH)).toBe(MAX_TIMER_DELAY_MS);
    expect(callersLeftMs(at(MAX_TIMER_DELAY_MS + 1), DEFAULT, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    const farthest = metadataOf(['x-deadline-epoch-ms', '9999999999999999'], ['grpc-timeout', '99999999H']);
    expect(callersLeftMs(farthest, DEFAULT, EPOCH)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('channelDeadline', () => {
  it('hands grpc-js an end within what a grpc-js server reads (2^31−1 ms in whole seconds), else none (SPEC D1)', () => {
    expect(GRPC_DEADLINE_REACH_MS).toBe(2_147_483_000);
    expect(channelDeadline(250.7, EPOCH)).toBe(EPOCH + 250);
    expect(channelDeadline(GRPC_DEADLINE_REACH_MS, EPOCH)).toBe(EPOCH + GRPC_DEADLINE_REACH_MS);
    // 2147483001 ms is written 2147484S, which a grpc-js server reads as already expired
    expect(channelDeadline(GRPC_DEADLINE_REACH_MS + 1, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    expect(channelDeadline(MAX_TIMER_DELAY_MS, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    expect(channelDeadline(4e14, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    expect(channelDeadline(Number.POSITIVE_INFINITY, EPOCH)).toBe(Number.POSITIVE_INFINITY);
    expect(channelDeadline(0, EPOCH)).toBe(EPOCH);
  });
});
