import type { Metadata } from '@grpc/grpc-js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { DeadlineHeaders } from '../deadline/constants.js';
import { type HeaderFormat, writeDeadlineHeaders } from '../deadline/deadline.js';
import { parseEnvoyTimeoutMs, parseEpochMs, parseGrpcTimeout } from '../deadline/parse.js';

/**
 * How a deadline travels in gRPC (SPEC D1, D5, D8): grpc-js's own (`Date | number` epoch ms on the
 * channel call, written as `grpc-timeout`), the deadline headers prazo writes beside it as metadata,
 * and the caller's own metadata read back as a limit. prazo/grpc's client interceptor and its
 * executor transport (transport.ts) both write and read through these.
 */

/**
 * grpc-js deadlines are `Date | number` (wall-clock epoch ms; `Infinity` means none). Turns one into
 * epoch ms, or `undefined` for "no deadline" and for anything unusable (NaN, wrong type).
 */
export function grpcDeadlineEpochMs(deadline: unknown): number | undefined {
  const epoch = deadline instanceof Date ? deadline.getTime() : deadline;
  return typeof epoch === 'number' && Number.isFinite(epoch) ? epoch : undefined;
}

/** The defaults of `HEADER_FORMAT_OPTIONS`: `x-deadline-epoch-ms` alone. */
const DEFAULT_FORMAT: HeaderFormat = Object.freeze({});

/**
 * `format` (undefined: the defaults) as a gRPC call writes it: never `grpc-timeout`, which grpc-js
 * writes itself from the channel call's deadline (a second one would be a duplicate key).
 */
export function grpcHeaderFormat(format: HeaderFormat | undefined): HeaderFormat {
  if (format === undefined) return DEFAULT_FORMAT;
  return format.grpcTimeout ? { ...format, grpcTimeout: false } : format;
}

/**
 * True for a header name grpc-js takes as a string-valued metadata key: lowercased, only letters,
 * digits, `-`, `_`, `.`, and not ending in `-bin` (those carry bytes). An HTTP header name may hold more
 * (`!`, `~`, ...): grpc-js would throw on it when the call starts.
 */
export function isGrpcMetadataKey(name: string): boolean {
  const key = name.toLowerCase();
  return /^[0-9a-z_.-]+$/.test(key) && !key.endsWith('-bin');
}

/**
 * The ms left from `epochNow` to the earliest deadline the caller's own `metadata` declares for the
 * call (SPEC D1, D3, D5, D8), +∞ for none: `x-deadline-epoch-ms` (whatever name `format` writes: a
 * caller's deadline all the same) and the absolute name `format` writes, in epoch ms; a
 * `grpc-timeout` key (grpc-js writes the call's own over it, made no later by this); Envoy's relative
 * header when `format` writes it (a relative header set on the call is its limit from now). Each
 * value is read alone by the strict parsers, as prazo/http reads a caller's header: garbage and an
 * Envoy `0` ("no timeout") are ignored, so the result is never NaN. So is a limit further away than
 * a timer holds (2^31-1 ms): it bounds nothing in practice, and as a call's deadline grpc-js would
 * throw on it (past 10^8 hours) or a grpc-js server read its `grpc-timeout` as already gone. A
 * deadline already gone is negative (the call is refused, D4).
 */
export function callersLeftMs(metadata: Metadata, format: HeaderFormat, epochNow: number): number {
  let left = earliestEpochMs(metadata, DeadlineHeaders.epochMs) - epochNow;
  const name = format.epochMs;
  if (typeof name === 'string' && name.toLowerCase() !== DeadlineHeaders.epochMs) {
    const own = earliestEpochMs(metadata, name) - epochNow;
    if (own < left) left = own;
  }
  const grpc = earliestRelativeMs(metadata, DeadlineHeaders.grpcTimeout, parseGrpcTimeout);
  if (grpc < left) left = grpc;
  if (format.envoy) {
    const envoy = earliestRelativeMs(metadata, DeadlineHeaders.envoyExpected, parseEnvoyTimeoutMs);
    if (envoy < left) left = envoy;
  }
  return left > MAX_TIMER_DELAY_MS ? Number.POSITIVE_INFINITY : left;
}

/** The earliest valid epoch ms among `metadata`'s values of `name`; +∞ for none. */
function earliestEpochMs(metadata: Metadata, name: string): number {
  let earliest = Number.POSITIVE_INFINITY;
  for (const value of metadata.get(name)) {
    const epoch = typeof value === 'string' ? parseEpochMs(value) : undefined;
    if (epoch !== undefined && epoch < earliest) earliest = epoch;
  }
  return earliest;
}

/** The shortest valid relative limit among `metadata`'s values of `name`, read by `parse`; +∞ for none. */
function earliestRelativeMs(
  metadata: Metadata,
  name: string,
  parse: (text: string) => number | undefined,
): number {
  let earliest = Number.POSITIVE_INFINITY;
  for (const value of metadata.get(name)) {
    const ms = typeof value === 'string' ? parse(value) : undefined;
    if (ms !== undefined && ms < earliest) earliest = ms;
  }
  return earliest;
}

/**
 * The farthest limit, in ms, a channel call's deadline can carry (2^31 − 1 ms rounded down to whole
 * seconds, about 24.8 days). grpc-js writes a limit of 10^8 ms or more in whole seconds rounded up,
 * a grpc-js server reads a `grpc-timeout` above 2^31 − 1 ms as already expired (its 32-bit count
 * wraps), and grpc-js's client throws on one past 10^8 hours, outside any listener.
 */
export const GRPC_DEADLINE_REACH_MS = Math.floor(MAX_TIMER_DELAY_MS / 1000) * 1000;

/**
 * The deadline a channel call is created with for a limit `leftMs` from `epochNow`: its instant,
 * rounded down, or none (`Infinity`) when it is farther than {@link GRPC_DEADLINE_REACH_MS} or
 * endless. A far deadline then neither fails the call early at a grpc-js server nor makes grpc-js
 * throw; the deadline headers still carry it (as far as a timer reaches, as prazo/http writes them),
 * and on the executor path its timer still ends the attempt at the real instant.
 */
export function channelDeadline(leftMs: number, epochNow: number): number {
  return leftMs <= GRPC_DEADLINE_REACH_MS ? Math.floor(epochNow + leftMs) : Number.POSITIVE_INFINITY;
}

/**
 * Puts the deadline headers of a limit `leftMs` from `epochNow` (one reading of the clock) into
 * `metadata` in `format` (a {@link grpcHeaderFormat}), written by the deadline's one writer (SPEC D1,
 * D5): the absolute instant beside grpc-js's relative `grpc-timeout`, and Envoy's header on request.
 * A receiver reads a relative timeout from when it *reads* the call, so a busy receiver (or a slow
 * network) stretches it by the transit; the absolute instant does not stretch, and prazo's reader
 * takes the earlier of the two. A value the caller set under one of these names is replaced: the
 * call's limit was made no later than it ({@link callersLeftMs}), so the one written is the earliest
 * known (D5), and a garbage or later one never travels beside it.
 */
export function putDeadlineMetadata(
  metadata: Metadata,
  format: HeaderFormat,
  leftMs: number,
  epochNow: number,
): void {
  const out: string[] = [];
  writeDeadlineHeaders(out, format, leftMs, epochNow);
  for (let i = 0; i < out.length; i += 2) metadata.set(out[i]!, out[i + 1]!);
}
