import { type CsvOptions, parseCsv } from './csv.js';
import { type PrometheusOptions, parsePrometheus } from './prometheus.js';
import { parseSampleList } from './samples.js';
import type { LatencyDistribution, LatencyUnit, SourceFormat } from './types.js';

export interface ReadSourceOptions {
  /** Force a format; default: detected (bucket lines → prometheus, a header → csv, else samples). */
  readonly format?: SourceFormat;
  readonly unit?: LatencyUnit;
  /** Prometheus: the histogram to read. */
  readonly metric?: string;
  /** CSV: the latency column. */
  readonly column?: string;
}

/** Guesses the format from the text (bounded look at the first lines). */
export function detectFormat(text: string): SourceFormat {
  const head = text.slice(0, 64 * 1024);
  if (/_bucket\s*\{[^}\n]*\ble\s*=/.test(head)) return 'prometheus';
  const first = head.split(/\r?\n/).find((l) => l.trim() !== '' && !l.trim().startsWith('#')) ?? '';
  return /[a-zA-Z_]/.test(first) && /[,;\t]|^[a-zA-Z_]+$/.test(first.trim()) ? 'csv' : 'samples';
}

/** Parses a latency source in any supported format; throws `SourceError` on bad input. */
export function readLatencySource(text: string, options: ReadSourceOptions = {}): LatencyDistribution {
  const format = options.format ?? detectFormat(text);
  if (format === 'prometheus') {
    const o: PrometheusOptions = { metric: options.metric, unit: options.unit };
    return parsePrometheus(text, o);
  }
  if (format === 'csv') {
    const o: CsvOptions = { column: options.column, unit: options.unit };
    return parseCsv(text, o);
  }
  return parseSampleList(text, options.unit ?? 'ms');
}
