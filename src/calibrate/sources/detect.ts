import type { OptionsOf } from '../../options/declare.js';
import { readOptions } from '../../options/validator.js';
import { type CsvOptions, parseCsv } from './csv.js';
import { type PrometheusOptions, parsePrometheus } from './prometheus.js';
import { parseSampleList } from './samples.js';
import {
  checkText,
  type LatencyDistribution,
  SOURCE_OPTIONS,
  SourceError,
  type SourceFormat,
} from './types.js';

export type ReadSourceOptions = OptionsOf<typeof SOURCE_OPTIONS>;

/** `name_bucket{labels`: a global regex, so matches never overlap and one scan is linear. */
const BUCKET_OPEN = /_bucket\s*\{([^}\n]*)/g;

/** True when some `_bucket{...}` in `head` has an `le` label. Linear in `head`, unlike one regex with
 * `[^}\n]*\ble=`, which backtracks from every `_bucket{` and took seconds on a 64 KB hostile head. */
function hasBucketLine(head: string): boolean {
  BUCKET_OPEN.lastIndex = 0;
  for (let m = BUCKET_OPEN.exec(head); m !== null; m = BUCKET_OPEN.exec(head)) {
    if (/\ble\s*=/.test(m[1]!)) return true;
  }
  return false;
}

/** Guesses the format from the text (bounded look at the first lines). */
export function detectFormat(text: string): SourceFormat {
  const head = text.slice(0, 64 * 1024);
  if (hasBucketLine(head)) return 'prometheus';
  const first = head.split(/\r?\n/).find((l) => l.trim() !== '' && !l.trim().startsWith('#')) ?? '';
  if (/^ *sep=[,;\t|] *$/i.test(first)) return 'csv'; // Excel's separator line
  return /[a-zA-Z_]/.test(first) && /[,;\t]|^[a-zA-Z_]+$/.test(first.trim()) ? 'csv' : 'samples';
}

/**
 * Parses a latency source in any supported format; throws `SourceError` on bad input, and when the
 * unit is nowhere to be read: a histogram's or a CSV column's name without one, or a sample list, with
 * no `unit` given.
 */
export function readLatencySource(text: string, options: ReadSourceOptions = {}): LatencyDistribution {
  readOptions('readLatencySource', SOURCE_OPTIONS, options);
  checkText(text);
  const format = options.format ?? detectFormat(text);
  if (format === 'prometheus') {
    const o: PrometheusOptions = { metric: options.metric, unit: options.unit };
    return parsePrometheus(text, o);
  }
  if (format === 'csv') {
    const o: CsvOptions = { column: options.column, unit: options.unit };
    return parseCsv(text, o);
  }
  // A list of numbers has no name to carry its unit: it must be given, never assumed (issue 27).
  const read = parseSampleList(text, options.unit ?? 'ms');
  if (options.unit === undefined) {
    throw new SourceError(
      0,
      `a list of ${read.count} latencies does not say its unit: give it, --unit s|ms|us (or \`unit:\` under the config's \`histogram\`)`,
    );
  }
  return read;
}
