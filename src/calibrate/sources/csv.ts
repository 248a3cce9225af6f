import { InvalidOptionsError } from '../../errors/options.js';
import { type OptionsOf, pickOptions } from '../../options/declare.js';
import { readOptions } from '../../options/validator.js';
import { fromSamples, parseLatency } from './exact.js';
import {
  classifyOutcome,
  type LatencyDistribution,
  type LatencyUnit,
  OUTCOME_KEYS,
  SOURCE_LIMITS,
  SOURCE_OPTIONS,
  SourceError,
  toLines,
  UNIT_TO_MS,
} from './types.js';

/**
 * A CSV export (a load-test report, a log query) with a header row and a latency column, plus an
 * optional outcome/status column for the healthy-window guard. The latency column is `column` when
 * given, else the first header that names a latency; its unit comes from the name (`_ms`, `_s`,
 * `_seconds`, `_us`), else from `unit`, and is never guessed: a column `took` in seconds read as ms
 * gave a p99 of 0.13 ms and a 1 ms production timeout (issue 27), so a name without a unit and no
 * `unit` is an error. Comma, semicolon or tab separated; RFC 4180 quoting: a quoted field may hold
 * the separator, `""` and line breaks.
 */
export const CSV_OPTIONS = pickOptions(SOURCE_OPTIONS, ['column', 'unit']);

export type CsvOptions = OptionsOf<typeof CSV_OPTIONS>;

const LATENCY_NAMES =
  /^(latency|duration|elapsed|response_?time|rt|time|took)(_?(ms|s|seconds|millis|milliseconds|us|micros))?$|^(ms|millis)$/;

function unitOf(name: string): LatencyUnit | undefined {
  if (/(^|_)(ms|millis|milliseconds)$/.test(name)) return 'ms';
  if (/(_s|_seconds|_secs)$/.test(name)) return 's';
  if (/(_us|_micros|_microseconds)$/.test(name)) return 'us';
  return undefined;
}

/**
 * RFC 4180 records from lines: a quoted field may hold the separator, `""` for a quote, and line
 * breaks (the record then goes on on the next line). One pass over the text, whatever the breaks.
 */
class CsvRecords {
  readonly #separator: string;
  #fields: string[] = [];
  #field = '';
  #quoted = false;
  /** Line number (1-based) the record being read starts at, or 0 between records. */
  start = 0;

  constructor(separator: string) {
    this.#separator = separator;
  }

  /** True while a record is open (a quoted field crossed a line break). */
  get open(): boolean {
    return this.start !== 0;
  }

  /**
   * Feeds one line; returns the record's fields when the line completes it. Text between quotes and
   * separators is copied a run at a time: one character at a time, a 16 MB quoted field took seconds.
   */
  feed(line: string, lineNo: number): string[] | undefined {
    if (this.start === 0) this.start = lineNo;
    else this.#field += '\n'; // the break was inside a quoted field
    const n = line.length;
    let i = 0;
    while (i < n) {
      if (this.#quoted) {
        const q = line.indexOf('"', i);
        if (q < 0) {
          this.#field += line.slice(i);
          break;
        }
        this.#field += line.slice(i, q);
        if (line[q + 1] === '"') {
          this.#field += '"';
          i = q + 2;
        } else {
          this.#quoted = false;
          i = q + 1;
        }
        continue;
      }
      let j = i;
      while (j < n && line[j] !== '"' && line[j] !== this.#separator) j += 1;
      if (j > i) {
        this.#field += line.slice(i, j);
        i = j;
        continue;
      }
      if (line[i] === '"' && this.#field.trim() === '') {
        this.#quoted = true;
        this.#field = '';
      } else if (line[i] === this.#separator) {
        this.#fields.push(this.#field);
        this.#field = '';
      } else this.#field += '"'; // a quote inside an unquoted field is a character like any other
      i += 1;
    }
    if (this.#quoted) return undefined;
    const fields = [...this.#fields, this.#field];
    this.#fields = [];
    this.#field = '';
    this.start = 0;
    return fields;
  }

  /** Throws when the text ended inside a quoted field. */
  end(): void {
    if (this.open) throw new SourceError(this.start, 'unbalanced quote: the quoted field never ends');
  }
}

export function parseCsv(text: string, options: CsvOptions = {}): LatencyDistribution {
  readOptions('parseCsv', CSV_OPTIONS, options);
  if (options.column !== undefined && options.column.trim() === '') {
    // Trimmed to '', it matched an unnamed column (`a,,b`) and read its numbers as the latencies.
    throw new InvalidOptionsError('parseCsv', ['`column` must name a column, got a blank string']);
  }
  const lines = toLines(text);
  const content = (from: number): number =>
    lines.findIndex((l, i) => i >= from && l.trim() !== '' && !l.startsWith('#'));
  let headerIndex = content(0);
  if (headerIndex < 0) throw new SourceError(0, 'empty CSV');
  // Excel's `sep=;` line: the separator, declared, and the header on the next line.
  const declared = /^ *sep=([,;\t|]) *$/i.exec(lines[headerIndex]!)?.[1];
  if (declared !== undefined) {
    headerIndex = content(headerIndex + 1);
    if (headerIndex < 0) throw new SourceError(0, 'empty CSV');
  }
  const headerLine = lines[headerIndex]!;
  const separator =
    declared ??
    (headerLine.includes(',')
      ? ','
      : headerLine.includes('\t')
        ? '\t'
        : headerLine.includes(';')
          ? ';'
          : ',');
  const records = new CsvRecords(separator);
  let at = headerIndex;
  let headerFields = records.feed(headerLine, headerIndex + 1);
  while (headerFields === undefined && at + 1 < lines.length) {
    at += 1;
    headerFields = records.feed(lines[at]!, at + 1);
  }
  records.end();
  const header = headerFields!.map((h) => h.trim().toLowerCase());
  const wanted = options.column?.trim().toLowerCase();
  const col = wanted !== undefined ? header.indexOf(wanted) : header.findIndex((h) => LATENCY_NAMES.test(h));
  if (col < 0) {
    const why = wanted !== undefined ? `no column named ${JSON.stringify(wanted)}` : 'no latency column';
    throw new SourceError(
      headerIndex + 1,
      `${why} in header (${header.slice(0, 12).join(', ')}); use --column`,
    );
  }
  const outcomeKey = OUTCOME_KEYS.find((k) => header.includes(k));
  const outcomeCol = outcomeKey === undefined ? -1 : header.indexOf(outcomeKey);
  const named = unitOf(header[col]!);
  const unit = named ?? options.unit;
  if (unit === undefined) {
    throw new SourceError(
      headerIndex + 1,
      `column ${header[col]} does not say its unit (a name ending in _ms, _s, _seconds or _us would): give it, --unit s|ms|us (or \`unit:\` under the config's \`histogram\`)`,
    );
  }
  const notes = [
    `column ${header[col]} in ${unit}${named === undefined ? ' (as given)' : ' (from its name)'}`,
  ];
  if (outcomeKey !== undefined) notes.push(`outcome from column ${outcomeKey}`);

  const success: number[] = [];
  let errors = 0;
  let timeouts = 0;
  let cancelled = 0;
  for (let i = at + 1; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (!records.open && (line.trim() === '' || line.startsWith('#'))) continue;
    const first = records.open ? records.start : i + 1;
    const fields = records.feed(line, i + 1);
    if (fields === undefined) continue;
    const value = parseLatency(fields[col] ?? '');
    if (value === undefined || !(value * UNIT_TO_MS[unit] <= SOURCE_LIMITS.maxLatencyMs)) {
      throw new SourceError(
        first,
        `column ${header[col]} is not a latency: ${JSON.stringify((fields[col] ?? '').slice(0, 40))}`,
      );
    }
    const outcome = outcomeCol < 0 ? 'success' : classifyOutcome(outcomeKey!, fields[outcomeCol] ?? '');
    if (outcome === 'success') success.push(value * UNIT_TO_MS[unit]);
    else if (outcome === 'timeout') timeouts += 1;
    else if (outcome === 'error') errors += 1;
    else cancelled += 1; // a call the caller or a winning hedge cut: not the dependency's failure
  }
  records.end();
  if (success.length + errors + timeouts + cancelled === 0) throw new SourceError(0, 'no data rows in CSV');
  if (cancelled > 0) notes.push(`${cancelled} cancelled call(s) left out (neither a success nor a failure)`);
  return fromSamples('csv', Float64Array.from(success), errors, timeouts, notes);
}
