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

/** `grpc-timeout`, e.g. `250m`, `2S`, `1500000u`. Returns the relative duration in ms. */
export function parseGrpcTimeout(value: string): number | undefined {
  const v = clean(value);
  const match = v === undefined ? null : GRPC_TIMEOUT.exec(v);
  if (match === null) return undefined;
  return Number(match[1]) * GRPC_UNIT_MS[match[2]!]!;
}

/**
 * Encodes a duration as `grpc-timeout`, in the finest unit whose value fits in 8 digits, rounding
 * down: telling the next hop it has a little less time than it does is safe, a little more is not.
 */
export function formatGrpcTimeout(ms: number): string {
  const safe = ms > 0 && Number.isFinite(ms) ? ms : 0;
  const units: Array<[string, number]> = [
    ['m', 1],
    ['S', 1_000],
    ['M', 60_000],
    ['H', 3_600_000],
  ];
  for (const [unit, size] of units) {
    const amount = Math.floor(safe / size);
    if (amount < 100_000_000) return `${amount}${unit}`;
  }
  return '99999999H';
}
