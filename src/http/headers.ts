import { DeadlineHeaders } from '../deadline/constants.js';
import type { HeaderFormat } from '../deadline/deadline.js';

/**
 * Outgoing headers: the caller's, then the ones prazo owns (the deadline, SPEC D1/D5, and the
 * idempotency key, SPEC R5). Built as undici's flat `[name, value, ...]` array, its cheapest form.
 * A caller's own deadline header is dropped: the deadline prazo computed (the earliest one known)
 * is the one that travels; a caller's idempotency key is taken out and handed to the executor.
 */

/** Header containers accepted from callers (the shapes undici accepts). */
export type RequestHeaders =
  | Readonly<Record<string, string | readonly string[] | number | undefined>>
  | readonly string[]
  | Iterable<readonly [string, string | readonly string[] | undefined]>
  | null
  | undefined;

/** The absolute deadline header a format writes, lower-cased, or undefined when it writes none. */
export function epochHeaderName(format: HeaderFormat): string | undefined {
  const epoch = format.epochMs === undefined ? DeadlineHeaders.epochMs : format.epochMs;
  return epoch ? epoch.toLowerCase() : undefined;
}

/** Lower-cased names of the deadline headers a format writes (these are dropped from callers'). */
export function ownedDeadlineNames(format: HeaderFormat): readonly string[] {
  const names: string[] = [];
  const epoch = epochHeaderName(format);
  if (epoch) names.push(epoch);
  if (format.grpcTimeout) names.push(DeadlineHeaders.grpcTimeout);
  if (format.envoy) names.push(DeadlineHeaders.envoyExpected);
  return names;
}

/**
 * Appends the caller's headers to `out` (flat), skipping `dropped` names. The `keyHeader` header is
 * taken out too and its (first) value returned: the executor puts the key back on every attempt.
 */
export function appendCallerHeaders(
  out: string[],
  headers: RequestHeaders,
  dropped: readonly string[],
  keyHeader: string,
): string | undefined {
  if (headers == null) return undefined;
  let key: string | undefined;
  const add = (name: string, value: unknown): void => {
    if (value === undefined || value === null) return;
    const lower = name.toLowerCase();
    if (lower === keyHeader) {
      const first = Array.isArray(value) ? value[0] : value;
      if (first !== undefined && first !== null) key = String(first);
      return;
    }
    if (dropped.includes(lower)) return;
    if (Array.isArray(value)) for (const item of value) out.push(name, String(item));
    else out.push(name, String(value));
  };
  if (Array.isArray(headers)) {
    if (typeof headers[0] === 'string') {
      for (let i = 0; i + 1 < headers.length; i += 2) add(headers[i] as string, headers[i + 1]);
    } else {
      for (const pair of headers as unknown as Iterable<readonly [string, unknown]>) add(pair[0], pair[1]);
    }
  } else if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const pair of headers as Iterable<readonly [string, unknown]>) add(pair[0], pair[1]);
  } else {
    const record = headers as Record<string, unknown>;
    for (const name in record) add(name, record[name]);
  }
  return key;
}
