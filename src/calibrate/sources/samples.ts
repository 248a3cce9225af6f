import { pickOptions } from '../../options/declare.js';
import { readOptions } from '../../options/validator.js';
import { fromSamples, parseLatency } from './exact.js';
import {
  type LatencyDistribution,
  type LatencyUnit,
  SOURCE_LIMITS,
  SOURCE_OPTIONS,
  SourceError,
  toLines,
  UNIT_TO_MS,
} from './types.js';

const UNIT_OPTION = pickOptions(SOURCE_OPTIONS, ['unit']);

/**
 * A newline list of latencies, one per line, in `unit` (default ms). Blank lines and `#` comments
 * are skipped; anything else that is not a non-negative number is an error naming its line.
 */
export function parseSampleList(text: string, unit: LatencyUnit = 'ms'): LatencyDistribution {
  // Checked like the other parsers' options: `'sec'` read every sample as NaN ms and blamed line 1.
  readOptions('parseSampleList', UNIT_OPTION, { unit });
  const lines = toLines(text);
  const values: number[] = [];
  lines.forEach((line, i) => {
    const s = line.trim();
    if (s === '' || s.startsWith('#')) return;
    const value = parseLatency(s);
    if (value === undefined) throw new SourceError(i + 1, `not a latency: ${JSON.stringify(s.slice(0, 40))}`);
    const ms = value * UNIT_TO_MS[unit];
    if (!(ms <= SOURCE_LIMITS.maxLatencyMs))
      throw new SourceError(i + 1, `latency out of range: ${s.slice(0, 40)}`);
    values.push(ms);
  });
  if (values.length === 0) throw new SourceError(0, 'no samples found');
  return fromSamples('samples', Float64Array.from(values), 0, 0, [`${values.length} samples in ${unit}`]);
}
