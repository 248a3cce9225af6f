import type { WindowVerdict } from '../../calibrate/health.js';
import type { LatencyDistribution } from '../../calibrate/sources/types.js';
import type { TimeoutCalibration } from '../../calibrate/timeout.js';

/** What `prazo calibrate` found: printed as a table, or as this very object with `--json`. */
export interface CalibrateReport {
  readonly source: { kind: 'p99'; p99Ms: number } | ({ kind: 'file'; file: string } & LatencyDistribution);
  readonly health: WindowVerdict | null;
  /** Why the calibration was refused (SPEC C4), or null. */
  readonly refused: readonly string[] | null;
  readonly recommendation: TimeoutCalibration | null;
  readonly deadlineMs: number | null;
  readonly warnings: readonly string[];
}

const ms = (v: number | undefined): string => (v === undefined ? '-' : `${Math.round(v * 10) / 10} ms`);
const pct = (v: number): string => `${(v * 100).toFixed(2)}%`;

function rows(pairs: Array<[string, string]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `  ${k.padEnd(width)}  ${v}\n`).join('');
}

export function renderCalibrateTable(r: CalibrateReport): string {
  let out = '';
  const s = r.source;
  if (s.kind === 'p99') {
    out += `prazo calibrate: p99 ${ms(s.p99Ms)} (given)\n`;
  } else {
    out += `prazo calibrate: ${s.file} (${s.format})\n`;
    out += rows([
      ['calls', `${s.count} (${s.successes} ok, ${s.errors} errors, ${s.timeouts} timeouts)`],
      ['p50 / p95', `${ms(s.p50)} / ${ms(s.p95)}`],
      ['p99 / p99.9', `${ms(s.p99)} / ${ms(s.p999)}${s.p99Bounded ? '' : ' (lower bound only)'}`],
      ...(r.health
        ? ([
            [
              'window',
              `${r.health.health} (errors ${pct(r.health.errorRate)}, timeouts ${pct(r.health.timeoutRate)})`,
            ],
          ] as Array<[string, string]>)
        : []),
    ]);
    for (const note of s.notes) out += `  · ${note}\n`;
  }
  if (r.refused !== null) {
    out +=
      '\nREFUSED: this window is not healthy; a timeout calibrated on it would protect nothing (SPEC C4):\n';
    for (const reason of r.refused) out += `  - ${reason}\n`;
    return out;
  }
  const c = r.recommendation!;
  out += '\nrecommendation\n';
  out += rows([
    ['connect timeout', ms(c.connectMs)],
    ['response timeout', ms(c.responseMs)],
    ['attempts', String(c.attempts)],
    [
      'deadline',
      r.deadlineMs === null ? '(none given)' : `${ms(r.deadlineMs)}${c.feasible ? '' : ' INFEASIBLE'}`,
    ],
  ]);
  if (r.warnings.length > 0) {
    out += '\nwarnings\n';
    for (const w of r.warnings) out += `  - ${w}\n`;
  }
  return out;
}
