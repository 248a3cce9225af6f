import type { WindowVerdict } from '../../calibrate/health.js';
import { formatDuration as formatDurationMs } from '../../calibrate/promql.js';
import type { LatencyDistribution } from '../../calibrate/sources/types.js';
import type { TimeoutCalibration } from '../../calibrate/timeout.js';
import { civilOf } from '../../retry/http-date.js';
import type { FleetReport } from './calibrate-fleet.js';

/** `--dependency` (and `--write`): the config entry the measurement is for, before and after. */
export interface ConfigWrite {
  readonly file: string;
  readonly dependency: string;
  /** Its p99Ms now (measured, or assumed from its kind). */
  readonly fromMs: number;
  /** The kind whose starting value it is, when it was never measured; else null. */
  readonly assumed: string | null;
  /** The p99Ms written, or null (no `--write`, or a refused window). */
  readonly toMs: number | null;
  readonly written: boolean;
}

/** What `prazo calibrate` found: printed as a table, or as this very object with `--json`. */
export interface CalibrateReport {
  readonly source: { kind: 'p99'; p99Ms: number } | ({ kind: 'file'; file: string } & LatencyDistribution);
  readonly health: WindowVerdict | null;
  /** Why the calibration was refused (SPEC C4), or null. */
  readonly refused: readonly string[] | null;
  readonly recommendation: TimeoutCalibration | null;
  readonly deadlineMs: number | null;
  readonly warnings: readonly string[];
  /**
   * The line the config needs, from a measurement: the p99 (to 0–3 decimals) that loads back into
   * exactly the recommended response timeout. Null for a given `--p99` or a refused window.
   */
  readonly configLine: { readonly p99Ms: number } | null;
  /** The `--dependency` entry, and what `--write` did to it; null without `--dependency`. */
  readonly config: ConfigWrite | null;
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
  if (r.configLine !== null) {
    const w = r.config;
    const where =
      w === null
        ? 'under the dependency in prazo.config.yaml (--dependency NAME --write puts it there)'
        : w.written
          ? `written to ${w.file}, ${w.dependency} (was ${w.fromMs}${w.assumed === null ? '' : `, assumed from kind ${w.assumed}`})`
          : `for ${w.dependency} in ${w.file} (now ${w.fromMs}${w.assumed === null ? '' : `, assumed from kind ${w.assumed}`}; --write puts it there)`;
    out += `\nconfig\n  p99Ms: ${r.configLine.p99Ms}    # ${where}\n`;
  }
  return out;
}

/** Epoch ms as `2025-01-31T10:00Z` (UTC; seconds when not whole minutes), without reading a clock. */
export function formatEpoch(epochMs: number): string {
  const days = Math.floor(epochMs / 86_400_000);
  const msOfDay = epochMs - days * 86_400_000;
  const { year, month, day } = civilOf(epochMs);
  const two = (n: number): string => String(n).padStart(2, '0');
  const h = Math.floor(msOfDay / 3_600_000);
  const m = Math.floor((msOfDay % 3_600_000) / 60_000);
  const s = (msOfDay % 60_000) / 1000;
  const time = `${two(h)}:${two(m)}${s === 0 ? '' : `:${two(Math.floor(s))}`}`;
  return `${year}-${two(month)}-${two(day)}T${time}Z`;
}

const calls = (n: number): string => (n >= 10_000 ? `${Math.round(n / 100) / 10}k` : String(Math.round(n)));

/** How many refused sub-windows a table lists per dependency (the JSON has them all). */
const LISTED_WINDOWS = 6;

export function renderFleetTable(r: FleetReport): string {
  const w = r.window;
  let out =
    `prazo calibrate: ${r.dependencies.length} dependenc${r.dependencies.length === 1 ? 'y' : 'ies'} from ${r.prometheus}, ` +
    `${formatEpoch(w.startEpochMs)} to ${formatEpoch(w.endEpochMs)} in ${w.subWindows} sub-window(s) of ${formatDurationMs(w.stepMs)} ` +
    `(${r.elapsedMs} ms)\n`;
  for (const d of r.dependencies) {
    out += `\n${d.name}\n`;
    if (d.failure !== undefined) {
      out += `  FAILED        ${d.failure.message}\n`;
      continue;
    }
    const c = d.current;
    const pairs: Array<[string, string]> = [
      [
        'current',
        `p99Ms ${ms(c.p99Ms)} → response ${ms(c.responseMs)}, connect ${ms(c.connectMs)}, ${c.attempts} attempt(s)`,
      ],
    ];
    if (d.windows.length > 0) {
      const refused = d.windows.length - d.healthyWindows;
      pairs.push([
        'sub-windows',
        `${d.healthyWindows} of ${d.windows.length} healthy${refused > 0 ? `, ${refused} refused` : ''}`,
      ]);
    }
    const m = d.measured;
    if (m !== undefined) {
      const bucket =
        m.p99Bucket === undefined
          ? ''
          : `, in bucket (${ms(m.p99Bucket.lowerMs)}, ${ms(m.p99Bucket.upperMs)}]`;
      const rates =
        m.count > 0 ? ` (errors ${pct(m.errors / m.count)}, timeouts ${pct(m.timeouts / m.count)})` : '';
      pairs.push(['measured p99', `${ms(m.p99)}${bucket} over ${calls(m.count)} calls${rates}`]);
    }
    const rec = d.recommendation;
    if (rec !== undefined) {
      const change = r.changes.find((x) => x.dependency === d.name);
      const p99 =
        change === undefined
          ? '(unchanged)'
          : `p99Ms ${ms(change.toMs)}${change.assumed === undefined ? '' : ` (measured; was assumed from kind ${change.assumed})`}`;
      pairs.push([
        'recommended',
        `${p99} → response ${ms(rec.responseMs)}, connect ${ms(rec.connectMs)}, ${rec.attempts} attempt(s)`,
      ]);
    }
    if (d.drift !== undefined) {
      pairs.push(['drift', d.drift.status === 'ok' ? 'ok' : `${d.drift.status}: ${d.drift.reason}`]);
    }
    out += rows(pairs);
    if (d.refused !== null) for (const reason of d.refused) out += `  REFUSED       ${reason}\n`;
    const bad = d.windows.filter((x) => x.verdict.health !== 'healthy');
    const degraded = bad.filter((x) => x.verdict.health === 'degraded');
    for (const x of degraded.slice(0, LISTED_WINDOWS)) {
      out += `  · refused ${formatEpoch(x.startEpochMs)}–${formatEpoch(x.endEpochMs)}: ${x.verdict.reasons.join('; ')}\n`;
    }
    if (degraded.length > LISTED_WINDOWS)
      out += `  · ... and ${degraded.length - LISTED_WINDOWS} more degraded sub-window(s) (--json lists them)\n`;
    const few = bad.length - degraded.length;
    if (few > 0 && d.healthyWindows > 0) out += `  · ${few} sub-window(s) with too few calls to judge\n`;
    for (const note of m?.notes ?? []) out += `  · ${note}\n`;
    for (const warning of d.warnings) out += `  ! ${warning}\n`;
  }
  for (const s of r.skipped) out += `\n${s.name}\n  skipped       ${s.reason}\n`;
  const drifting = r.dependencies.filter(
    (d) => d.drift !== undefined && d.drift.status !== 'ok' && d.drift.status !== 'insufficient-data',
  );
  const refused = r.dependencies.filter((d) => d.refused !== null);
  out += '\n';
  out += `${drifting.length} drifting, ${refused.length} refused, ${r.dependencies.filter((d) => d.failure !== undefined).length} failed; `;
  if (r.written) out += `wrote ${r.changes.length} p99Ms change(s) to ${r.config}\n`;
  else if (r.changes.length > 0)
    out += `${r.changes.length} p99Ms change(s): --write applies them to ${r.config}\n`;
  else out += 'nothing to change\n';
  return out;
}
