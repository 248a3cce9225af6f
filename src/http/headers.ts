import { errors } from 'undici';
import { DeadlineHeaders } from '../deadline/constants.js';
import type { HeaderFormat } from '../deadline/deadline.js';
import { parseEnvoyTimeoutMs, parseEpochMs, parseGrpcTimeout } from '../deadline/parse.js';

/**
 * Outgoing headers: the caller's, then the ones prazo owns (the deadline, SPEC D1/D5, and the
 * idempotency key, SPEC R5). Built as undici's flat `[name, value, ...]` array, its cheapest form.
 * A caller's own deadline header is taken out and read: the deadline prazo computes is never later
 * than it, and that one travels (the earliest known). A caller's idempotency key is taken out and
 * handed to the executor. What undici would refuse (a header container of the wrong type, a value
 * that is an object) is refused here with undici's own typed `InvalidArgumentError`: prazo sends the
 * headers on as text, and undici would no longer see what the caller gave.
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

/** What a caller's headers said besides the headers kept. */
export interface CallerHeaders {
  /** The caller's idempotency key (its first value), when it gave one. */
  readonly key: string | undefined;
  /** The earliest absolute deadline among the caller's own deadline headers, epoch ms; +∞ for none. */
  readonly epochMs: number;
  /** The earliest relative one (`grpc-timeout`, Envoy's), ms from the call's start; +∞ for none. */
  readonly relativeMs: number;
}

/** Caller headers with nothing to say (no headers given): shared, nothing allocated. */
const NOTHING: CallerHeaders = Object.freeze({
  key: undefined,
  epochMs: Number.POSITIVE_INFINITY,
  relativeMs: Number.POSITIVE_INFINITY,
});

const invalid = (message: string): Error => new errors.InvalidArgumentError(message);

/**
 * One header value as it goes on the wire, as undici's `processHeader` makes it: a string as it is,
 * a number, boolean or bigint as its text, `null` inside a list as an empty value; `undefined`
 * (inside a list too, where undici would send the text "undefined") is skipped. An object, a
 * symbol or a function is refused (`String()` would send "[object Object]").
 */
function wireText(name: string, value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value === undefined) return undefined;
  if (value === null) return '';
  const type = typeof value;
  if (type === 'object' || type === 'symbol' || type === 'function') throw invalid(`invalid ${name} header`);
  return String(value);
}

/**
 * Reads the caller's headers into `out` (no closure: one object per call, the state of one read). A
 * hostile iterable calling back into prazo gets a reader of its own.
 */
class Reader implements CallerHeaders {
  key: string | undefined = undefined;
  epochMs = Number.POSITIVE_INFINITY;
  relativeMs = Number.POSITIVE_INFINITY;

  constructor(
    readonly out: string[],
    readonly dropped: readonly string[],
    readonly keyHeader: string,
    readonly epochHeader: string | undefined,
  ) {}

  add(name: unknown, value: unknown): void {
    if (typeof name !== 'string') throw invalid('invalid header key');
    // A value left out (a record's optional field): undici skips it too.
    if (value === undefined || value === null) return;
    const lower = name.toLowerCase();
    if (typeof value === 'string') {
      // The common case: one string, kept.
      if (lower !== this.keyHeader && !this.dropped.includes(lower)) this.out.push(name, value);
      else this.take(lower, value);
    } else if (Array.isArray(value)) {
      const keep = lower !== this.keyHeader && !this.dropped.includes(lower);
      for (const item of value as readonly unknown[]) {
        const text = wireText(name, item);
        if (text === undefined) continue;
        if (keep) this.out.push(name, text);
        else this.take(lower, text);
      }
    } else {
      const text = wireText(name, value)!;
      if (lower !== this.keyHeader && !this.dropped.includes(lower)) this.out.push(name, text);
      else this.take(lower, text);
    }
  }

  /** A header prazo owns: the key (its first value) is kept aside, a deadline read (SPEC D1, D3, D8). */
  take(lower: string, text: string): void {
    if (lower === this.keyHeader) {
      if (this.key === undefined) this.key = text;
      return;
    }
    // Only the names the route writes reach here: garbage is ignored, as a server ignores it (D3).
    if (lower === this.epochHeader) {
      const epochMs = parseEpochMs(text);
      if (epochMs !== undefined && epochMs < this.epochMs) this.epochMs = epochMs;
      return;
    }
    const ms =
      lower === DeadlineHeaders.grpcTimeout
        ? parseGrpcTimeout(text)
        : lower === DeadlineHeaders.envoyExpected
          ? parseEnvoyTimeoutMs(text)
          : undefined;
    if (ms !== undefined && ms < this.relativeMs) this.relativeMs = ms;
  }
}

/**
 * Whether `headers` is iterated rather than read as a record: an iterator of its own or from a
 * prototype other than `Object.prototype` (undici's rule: a polluted `Object.prototype` does not
 * turn every record into an iterable).
 */
function iterable(headers: object): boolean {
  if (Object.hasOwn(headers, Symbol.iterator)) return true;
  const prototype = Object.getPrototypeOf(headers) as object | null;
  return (
    prototype !== null &&
    prototype !== Object.prototype &&
    typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
  );
}

/**
 * Appends the caller's headers to `out` (flat), skipping the `dropped` names, which are read: the
 * `keyHeader` header's (first) value, and the earliest deadline in `epochHeader` (absolute) or in a
 * relative deadline header among `dropped`. Throws undici's `InvalidArgumentError` for what undici
 * refuses: headers that are not a container, a flat list of odd length, a list entry that is not a
 * `[name, value]` pair, a name that is not a string, a value that is an object.
 */
export function appendCallerHeaders(
  out: string[],
  headers: RequestHeaders,
  dropped: readonly string[],
  keyHeader: string,
  epochHeader?: string,
): CallerHeaders {
  if (headers == null) return NOTHING;
  if (typeof headers !== 'object') throw invalid('headers must be an object or an array');
  const reader = new Reader(out, dropped, keyHeader, epochHeader);
  if (Array.isArray(headers)) {
    const list = headers as readonly unknown[];
    if (typeof list[0] === 'string') {
      // A name without its value: undici refuses the whole list rather than drop the name.
      if (list.length % 2 !== 0) throw invalid('headers array must be even');
      for (let i = 0; i < list.length; i += 2) reader.add(list[i], list[i + 1]);
    } else {
      for (const pair of list) addPair(reader, pair);
    }
  } else if (iterable(headers)) {
    for (const pair of headers as Iterable<unknown>) addPair(reader, pair);
  } else {
    // Own keys only, as undici reads a record: an inherited one (a polluted prototype) is no header.
    const record = headers as Record<string, unknown>;
    const names = Object.keys(record);
    for (let i = 0; i < names.length; i += 1) reader.add(names[i], record[names[i]!]);
  }
  return reader;
}

function addPair(reader: Reader, pair: unknown): void {
  if (!Array.isArray(pair) || pair.length !== 2) throw invalid('headers must be in key-value pair format');
  reader.add(pair[0], pair[1]);
}
