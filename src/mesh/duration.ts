/**
 * A duration in each system's own spelling. prazo's numbers are whole milliseconds here (the policy
 * rounds up); each system has its grammar, and a wrong one is either refused at apply time or, worse,
 * read as something else:
 * - Gateway API (GEP-2257) and Istio: a strict subset of Go's `time.ParseDuration`, up to four
 *   `<1-5 digits><h|m|s|ms>` parts (`1s500ms`, `119ms`; no fractions, no `us`).
 * - Envoy and gRPC service config: protobuf JSON `google.protobuf.Duration`, seconds with up to nine
 *   fractional digits and an `s` (`0.119s`).
 * - Linkerd annotations: an integer and a unit, no fractions (`119ms`), as its policy controller parses.
 */

const assertWholeMs = (ms: number): void => {
  if (!Number.isInteger(ms) || ms < 0) throw new RangeError(`not a whole number of ms: ${ms}`);
};

/** GEP-2257 (`^([0-9]{1,5}(h|m|s|ms)){1,4}$`): `119ms`, `10s`, `1m30s`, `5m`; zero parts left out. */
export function gatewayDuration(ms: number): string {
  assertWholeMs(ms);
  if (ms === 0) return '0s';
  const hours = Math.floor(ms / 3_600_000);
  if (hours > 99_999) throw new RangeError(`too long for GEP-2257: ${ms} ms`);
  const parts: Array<[number, string]> = [
    [hours, 'h'],
    [Math.floor(ms / 60_000) % 60, 'm'],
    [Math.floor(ms / 1000) % 60, 's'],
    [ms % 1000, 'ms'],
  ];
  return parts
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${n}${unit}`)
    .join('');
}

/** protobuf JSON Duration: `0.119s`, `2s`, `1.5s`. */
export function protoDuration(ms: number): string {
  assertWholeMs(ms);
  const seconds = Math.floor(ms / 1000);
  const rest = ms % 1000;
  if (rest === 0) return `${seconds}s`;
  return `${seconds}.${String(rest).padStart(3, '0').replace(/0+$/, '')}s`;
}

/**
 * protobuf JSON Duration with all nine fractional digits (`0.560000000s`), for gRPC service configs:
 * grpc-js (1.14) reads the digits after the point of a method config's `timeout` as nanoseconds as
 * they stand, so `0.56s` would be a 56 ns deadline. Nine digits mean the same to every reader.
 */
export function grpcDuration(ms: number): string {
  assertWholeMs(ms);
  const rest = ms % 1000;
  return rest === 0 ? `${ms / 1000}s` : `${Math.floor(ms / 1000)}.${String(rest).padStart(3, '0')}000000s`;
}

/** Linkerd: `<integer><ms|s|m|h|d>`. */
export function linkerdDuration(ms: number): string {
  assertWholeMs(ms);
  return `${ms}ms`;
}
