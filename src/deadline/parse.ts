import { MAX_DEADLINE_HEADER_LENGTH } from './constants.js';

/**
 * Strict parsers for deadline header values (SPEC D3, D8). Each returns `undefined` for anything it
 * does not fully understand: the caller then falls back to its default. Input length is checked
 * before any other work, so a hostile value costs O(1).
 */

const EPOCH_MS = /^[0-9]{1,16}$/;
const RELATIVE_MS = /^[0-9]{1,10}$/;
/** gRPC over HTTP/2 spec: TimeoutValue is 1 to 8 ASCII digits, TimeoutUnit one of H M S m u n. */
const GRPC_TIMEOUT = /^([0-9]{1,8})([HMSmun])$/;

const GRPC_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/** Trims optional whitespace (HTTP OWS) after the length check. */
const clean = (value: string): string | undefined =>
  value.length > MAX_DEADLINE_HEADER_LENGTH ? undefined : value.trim();

/** `x-deadline-epoch-ms`: decimal digits only (no sign, exponent, fraction or hex). */
export function parseEpochMs(value: string): number | undefined {
  const v = clean(value);
  return v !== undefined && EPOCH_MS.test(v) ? Number(v) : undefined;
}

/** `x-envoy-expected-rq-timeout-ms`: decimal ms. Returns the relative duration in ms. */
export function parseRelativeMs(value: string): number | undefined {
  const v = clean(value);
  return v !== undefined && RELATIVE_MS.test(v) ? Number(v) : undefined;
}

/**
 * `x-envoy-expected-rq-timeout-ms` as a limit, in ms: `0` is Envoy's "no timeout" (its router never
 * writes below 1), not an expired call, and reads as none (undefined), as anything unparsable does.
 * Every reader of the header (prazo/server, prazo/http's caller headers, prazo/grpc's metadata) reads
 * it through this one rule; the writer's twin is in `writeDeadlineHeaders` (never below 1).
 */
export function parseEnvoyTimeoutMs(value: string): number | undefined {
  const ms = parseRelativeMs(value);
  return ms === 0 ? undefined : ms;
}

/** Connect's `Timeout-Milliseconds` (connectrpc.com/docs/protocol): 1 to 10 ASCII digits. */
const CONNECT_TIMEOUT = /^[0-9]{1,10}$/;

/**
 * `connect-timeout-ms` (the Connect protocol's request timeout): relative ms, 1 to 10 ASCII digits,
 * the grammar Connect's own servers accept. `0` is a deadline already gone. Returns ms.
 */
export function parseConnectTimeout(value: string): number | undefined {
  const v = clean(value);
  return v !== undefined && CONNECT_TIMEOUT.test(v) ? Number(v) : undefined;
}

/** `grpc-timeout`, e.g. `250m`, `2S`, `1500000u`. Returns the relative duration in ms. */
export function parseGrpcTimeout(value: string): number | undefined {
  const v = clean(value);
  const match = v === undefined ? null : GRPC_TIMEOUT.exec(v);
  if (match === null) return undefined;
  return Number(match[1]) * GRPC_UNIT_MS[match[2]!]!;
}

const COARSER: ReadonlyArray<readonly [string, number]> = [
  ['m', 1],
  ['S', 1_000],
  ['M', 60_000],
  ['H', 3_600_000],
];

/**
 * Encodes a duration as `grpc-timeout` (gRPC over HTTP/2: TimeoutValue is a *positive* integer of at
 * most 8 digits, TimeoutUnit one of H M S m u n), rounding down: telling the next hop it has a little
 * less time than it does is safe, a little more is not. Whole ms in the finest of m, S, M, H whose
 * value fits 8 digits (`250m`, `100000S`); below 1 ms, the first of u, n that keeps a positive value
 * (`500u` for 0.5 ms, never `0m`, which says "expired"). Nothing left (or NaN) is `1n`, the least the
 * grammar can say; past 99999999 hours, that.
 */
export function formatGrpcTimeout(ms: number): string {
  if (!(ms > 0)) return '1n';
  if (ms >= 1) {
    for (const [unit, size] of COARSER) {
      const amount = Math.floor(ms / size);
      if (amount < 100_000_000) return `${amount}${unit}`;
    }
    return '99999999H';
  }
  const us = Math.floor(ms * 1_000);
  if (us >= 1) return `${us}u`;
  return `${Math.max(1, Math.floor(ms * 1_000_000))}n`;
}
