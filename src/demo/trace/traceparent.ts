import { randomBytes } from 'node:crypto';

/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/#traceparent-header),
 * as the demo's services pass a trace from hop to hop: `00-<trace-id>-<parent-id>-<flags>`, 32 and 16
 * lowercase hex digits, neither all zeros.
 *
 * Parsed defensively, as the recommendation asks of a receiver: anything that is not a valid header
 * (a wrong length, upper case, a zero id, version `ff`, a list of several values, garbage) gives
 * `undefined`, and the service starts a new trace rather than failing or joining a forged one. A
 * future version (`01`…`fe`) is read by its version-00 prefix, its extra fields ignored, as the spec
 * says; version 00 must be exactly 55 characters.
 */

export interface TraceParent {
  /** 32 lowercase hex digits, not all zeros. */
  readonly traceId: string;
  /** 16 lowercase hex digits, not all zeros: the caller's span. */
  readonly parentId: string;
  /** The trace flags byte (bit 0: sampled). */
  readonly flags: number;
}

const HEX = /^[0-9a-f]+$/;
const ZEROS = /^0+$/;

const hex = (text: string, length: number): boolean =>
  text.length === length && HEX.test(text) && !ZEROS.test(text);

/** Reads a `traceparent` header value (a string; an array is several headers: refused), or undefined. */
export function parseTraceparent(value: unknown): TraceParent | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (text.length < 55) return undefined;
  const version = text.slice(0, 2);
  if (!/^[0-9a-f]{2}$/.test(version) || version === 'ff') return undefined;
  if (version === '00' && text.length !== 55) return undefined;
  if (text.length > 55 && text[55] !== '-') return undefined;
  if (text[2] !== '-' || text[35] !== '-' || text[52] !== '-') return undefined;
  const traceId = text.slice(3, 35);
  const parentId = text.slice(36, 52);
  const flags = text.slice(53, 55);
  if (!hex(traceId, 32) || !hex(parentId, 16) || !/^[0-9a-f]{2}$/.test(flags)) return undefined;
  return { traceId, parentId, flags: Number.parseInt(flags, 16) };
}

/** The header for a span `spanId` of trace `traceId` (sampled). */
export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** Generates the ids of new traces and spans. */
export interface IdSource {
  /** A new trace started at `epochMs` (wall clock). */
  traceId(epochMs: number): string;
  spanId(): string;
}

/**
 * Random ids (never all zeros). A trace id starts with the epoch ms it was started at (12 hex
 * digits, as a UUIDv7 or an AWS X-Ray id carries its time) and ends with 80 random bits: the spec's
 * "random" right-most 7 bytes, which the retention sorts by. The time lets a service tell a trace
 * begun before its current scenario (work of the previous one still arriving) from one of its own.
 */
export const randomIds: IdSource = {
  traceId: (epochMs) => {
    const time = Number.isFinite(epochMs) && epochMs > 0 ? Math.floor(epochMs) % 2 ** 48 : 0;
    return time.toString(16).padStart(12, '0') + nonZero(10);
  },
  spanId: () => nonZero(8),
};

/** When a trace of {@link randomIds} started (epoch ms), or undefined for an id that carries no time. */
export function traceStartEpochMs(traceId: string): number | undefined {
  const time = Number.parseInt(traceId.slice(0, 12), 16);
  return Number.isFinite(time) && time > 0 ? time : undefined;
}

function nonZero(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString('hex');
    if (!ZEROS.test(id)) return id;
  }
}

/** Sequential ids for tests: `…0001`, `…0002`, … (trace ids and span ids each count on their own). */
export function sequentialIds(): IdSource {
  let traces = 0;
  let spans = 0;
  return {
    traceId: (_epochMs: number) => (++traces).toString(16).padStart(32, '0'), // carries no time
    spanId: () => (++spans).toString(16).padStart(16, '0'),
  };
}
