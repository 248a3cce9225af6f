import { PrazoError } from '../../errors/base.js';
import { ErrorCode } from '../../errors/codes.js';
import type { LatencySnapshot } from '../../latency/types.js';
import { defineOptions, option } from '../../options/declare.js';

/**
 * A latency distribution read from a file (SPEC C1: a histogram, never a mean), in ms, with outcome
 * counts for the healthy-window guard (SPEC C4): the same counts and quantiles as a live recorder's
 * window, so both feed the same guard. Every parser returns this or a {@link SourceError}.
 */
export interface LatencyDistribution
  extends Pick<
    LatencySnapshot,
    'count' | 'successes' | 'errors' | 'timeouts' | 'p50' | 'p95' | 'p99' | 'p999'
  > {
  readonly format: SourceFormat;
  /**
   * False when the p99 lies beyond what the source can measure (a Prometheus `+Inf` bucket): the
   * reported p99 is then only a lower bound and must not be calibrated on.
   */
  readonly p99Bounded: boolean;
  /** What a reader should know: the unit assumed, a repaired bucket, the series merged... */
  readonly notes: readonly string[];
}

export type SourceFormat = 'prometheus' | 'samples' | 'csv';
export type LatencyUnit = 's' | 'ms' | 'us';

/** How a latency file is read, declared once: `readLatencySource`, the parsers, `histogram:` in the config. */
export const SOURCE_OPTIONS = defineOptions({
  /** Force a format; default: detected (bucket lines → prometheus, a header → csv, else samples). */
  format: option.oneOf<SourceFormat, object>(['prometheus', 'samples', 'csv']),
  /**
   * Unit of the latencies (`le` of a histogram, a CSV column, samples). Default: from the name
   * (`_seconds` → s, `_ms` → ms, `_us` → µs); a name without a unit, or a sample list, needs it.
   */
  unit: option.oneOf<LatencyUnit, object>(['s', 'ms', 'us']),
  /** Prometheus: the histogram to read (base name, without `_bucket`); required when the file holds several. */
  metric: option.string({ maxLength: 200 }),
  /** CSV: the latency column. Default: the first header that names a latency. */
  column: option.string({ maxLength: 200 }),
});

export const UNIT_TO_MS: Readonly<Record<LatencyUnit, number>> = Object.freeze({ s: 1000, ms: 1, us: 0.001 });

/** Bad input, with the 1-based line it was found on (0 when it concerns the whole file). */
/** A latency file that cannot be read as one (code `INVALID_SOURCE`), naming its line when it has one. */
export class SourceError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.INVALID_SOURCE];
  /** 1-based line of the problem, 0 for the file as a whole. */
  readonly line: number;
  constructor(line: number, message: string) {
    super(ErrorCode.INVALID_SOURCE, line > 0 ? `line ${line}: ${message}` : message);
    this.line = line;
  }
}

/** Input bounds: a source is a report, not a data lake; past these it is refused at a bounded cost. */
export const SOURCE_LIMITS = Object.freeze({
  maxBytes: 16 * 1024 * 1024,
  maxLines: 2_000_000,
  maxLineLength: 64 * 1024,
  maxSeries: 10_000,
  /** About 31 years: past it a number is a unit or format mistake, not a latency. */
  maxLatencyMs: 1e12,
});

export const QUANTILES = Object.freeze({ p50: 0.5, p95: 0.95, p99: 0.99, p999: 0.999 });

/**
 * Throws `SourceError` unless the source is text: a Buffer (`readFileSync` without an encoding), a
 * number or `undefined` would otherwise fail as a TypeError deep in a parser.
 */
export function checkText(text: unknown): asserts text is string {
  if (typeof text === 'string') return;
  const got =
    text === null
      ? 'null'
      : text instanceof Uint8Array
        ? 'bytes (decode them first: readFileSync(path, "utf8"))'
        : Array.isArray(text)
          ? 'an array'
          : `a ${typeof text}`;
  throw new SourceError(0, `a latency source must be text (a string), got ${got}`);
}

/** Splits text into lines (LF or CRLF) after checking the size bounds. */
export function toLines(text: string): string[] {
  checkText(text);
  if (text.length > SOURCE_LIMITS.maxBytes) {
    throw new SourceError(0, `input is larger than ${SOURCE_LIMITS.maxBytes} bytes`);
  }
  // Count before splitting: splitting 10 MB of newlines allocates 10 million strings (seconds).
  let breaks = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (++breaks >= SOURCE_LIMITS.maxLines)
      throw new SourceError(0, `more than ${SOURCE_LIMITS.maxLines} lines`);
  }
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.length > SOURCE_LIMITS.maxLineLength) throw new SourceError(i + 1, 'line too long');
  });
  return lines;
}

/** How a call ended, as a latency source tells it; `cancelled` calls (a losing hedge, a caller that left) count for nothing. */
export type Outcome = 'success' | 'error' | 'timeout' | 'cancelled';

/**
 * The words of each outcome, as RE2/JavaScript regular expressions (matched whole, ignoring case), in
 * one place: {@link classifyOutcome} reads values with them, and {@link outcomeMatcher} writes them
 * into PromQL, so a file, a Prometheus query and a generated alert split calls the same way.
 * - `named`: an outcome word (`outcome`, `result`, `prazo_outcome`...): `success`/`ok` succeed,
 *   timeouts are `timeout`, `deadline_exceeded`, `timed_out`, a cancelled call is `cancelled`; any
 *   other word is an error.
 * - `status`: an HTTP/gRPC status: 408, 504 and `DEADLINE_EXCEEDED` time out; 5xx and the gRPC words
 *   `error`, `unavailable`, `internal` are errors; `cancelled` is cancelled; everything else succeeds.
 */
export const OUTCOME_WORDS = Object.freeze({
  named: Object.freeze({
    success: 'success|ok',
    timeout: 'timeout|deadline_exceeded|timed_out',
    cancelled: 'cancell?ed',
  }),
  status: Object.freeze({
    timeout: '408|504|deadline_exceeded',
    error: '5[0-9][0-9]|error|unavailable|internal',
    cancelled: 'cancell?ed',
  }),
});

const whole = (source: string): RegExp => new RegExp(`^(?:${source})$`, 'i');
const NAMED = {
  success: whole(OUTCOME_WORDS.named.success),
  timeout: whole(OUTCOME_WORDS.named.timeout),
  cancelled: whole(OUTCOME_WORDS.named.cancelled),
};
const STATUS = {
  timeout: whole(OUTCOME_WORDS.status.timeout),
  error: whole(OUTCOME_WORDS.status.error),
  cancelled: whole(OUTCOME_WORDS.status.cancelled),
};

/** Whether a label or column holds outcome words (`outcome`, `result`, `*_outcome`, `*_result`) rather than a status. */
export const isNamedOutcomeKey = (key: string): boolean => /(^|_)(outcome|result)$/.test(key);

/** Outcome of a call from a label/column value: outcome words, or an HTTP/gRPC-ish status. */
export function classifyOutcome(key: string, value: string): Outcome {
  const v = value.trim();
  if (isNamedOutcomeKey(key)) {
    if (NAMED.timeout.test(v)) return 'timeout';
    if (NAMED.cancelled.test(v)) return 'cancelled';
    return NAMED.success.test(v) ? 'success' : 'error';
  }
  if (STATUS.timeout.test(v)) return 'timeout';
  if (STATUS.cancelled.test(v)) return 'cancelled';
  return STATUS.error.test(v) ? 'error' : 'success';
}

/** Labels or columns that carry the outcome, in order of preference (`prazo_outcome`: prazo/otel's own). */
export const OUTCOME_KEYS = Object.freeze([
  'outcome',
  'prazo_outcome',
  'result',
  'status',
  'status_code',
  'code',
  'http_status_code',
  'http_response_status_code',
  'grpc_code',
]);
