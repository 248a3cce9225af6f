import type { DemoResult } from '../run/demo.js';
import { ms, pad, pct, times } from './format.js';
import { recoveryText } from './html.js';
import { isInstanceIncident, type ScenarioSummary, type StackMetrics } from './summary.js';
import { verdicts } from './verdicts.js';

/**
 * The terminal table printed at the end of `prazo demo`: one block per scenario, one row per stack,
 * then what the numbers say about the seed's claims (a claim that does not hold is said so).
 */
const COLUMNS: readonly { title: string; width: number; cell: (m: StackMetrics) => string }[] = [
  { title: 'supplier load', width: 14, cell: (m) => times(m.supplier.amplification) },
  {
    title: 'wasted work',
    width: 13,
    cell: (m) => `${ms(m.wasted.ms)}${m.wasted.stillRunning > 0 ? ' (≥)' : ''}`,
  },
  { title: 'ok ≤ deadline', width: 14, cell: (m) => pct(m.checkout.withinDeadlinePct) },
  { title: 'catalog ok', width: 11, cell: (m) => pct(m.catalog.successPct) },
  { title: 'catalog p99', width: 12, cell: (m) => ms(m.catalog.p99Ms) },
  {
    title: 'pool busy',
    width: 12,
    cell: (m) => `${m.pool.meanBusy}/${m.pool.connections} (${m.pool.maxBusy})`,
  },
  { title: 'user p50', width: 9, cell: (m) => ms(m.checkout.p50Ms) },
  { title: 'user p99', width: 9, cell: (m) => ms(m.checkout.p99Ms) },
];

/**
 * Below a scenario's rows (issue 23): how fast failed checkouts failed, what the throttle refused
 * (stacks that throttle, when it refused anything), and, for `recover`, how soon checkouts flowed again.
 */
function issue23Lines(scenario: ScenarioSummary): string[] {
  const lines: string[] = [];
  const each = (cell: (m: StackMetrics) => string): string =>
    scenario.stacks.map((m) => `${m.stack} ${cell(m)}`).join(', ');
  if (scenario.stacks.some((m) => m.checkout.failedP50Ms !== undefined))
    lines.push(`  failed checkouts, p50: ${each((m) => ms(m.checkout.failedP50Ms))}`);
  const throttling = scenario.stacks.filter(
    (m) =>
      m.throttled.refused > 0 &&
      scenario.series.stacks.some((s) => s.stack === m.stack && s.throttle !== undefined),
  );
  if (throttling.length > 0)
    lines.push(
      `  refused by the throttle (locally, nothing sent): ${throttling.map((m) => `${m.stack} ${m.throttled.refused} = ${pct(m.throttled.sharePct)} of checkouts`).join(', ')}`,
    );
  if (scenario.stacks.some((m) => m.recovery !== undefined)) {
    const back = scenario.stacks.find((m) => m.recovery !== undefined)!.recovery!.returnMs;
    lines.push(
      `  checkouts ≥ 99% within the deadline again, after the supplier's return at ${ms(back)}: ${each(recoveryText)}`,
    );
  }
  return lines;
}

export function renderTable(result: DemoResult): string {
  const s = result.settings;
  const lines: string[] = [];
  lines.push(
    `prazo demo: ${s.checkoutRate} checkout/s + ${s.catalogRate} catalog/s for ${ms(s.loadMs)} per stack, ` +
      `user deadline ${ms(s.userDeadlineMs)}, gateway pool ${s.poolConnections} connections ` +
      `(Little's law: ${ms((1000 * s.poolConnections) / (s.checkoutRate + s.catalogRate))} max latency)`,
  );
  if (result.calibration) {
    const c = result.calibration;
    const hop = (name: string, h: { measuredP99Ms: number; responseMs: number }) =>
      `${name} p99 ${h.measuredP99Ms} → ${h.responseMs} ms`;
    lines.push(
      `prazo calibration (healthy p99 → timeout): ${hop('orders', c.orders)}, ${hop('inventory', c.inventory)}, ${hop('supplier', c.supplier)}` +
        ` (the hops above wait for the supplier's hedge: ${c.supplier.hedgeMs} + ${c.supplier.measuredP99Ms} ms)`,
    );
  }
  const header = `  ${pad('', 10)}${COLUMNS.map((c) => pad(c.title, c.width, true)).join(' ')}`;
  for (const scenario of result.scenarios) {
    const longer = scenario.loadMs !== s.loadMs ? ` (${ms(scenario.loadMs)} per stack)` : '';
    lines.push('', `${scenario.title}: ${scenario.description}${longer}`, header);
    for (const m of scenario.stacks) {
      lines.push(`  ${pad(m.stack, 10)}${COLUMNS.map((c) => pad(c.cell(m), c.width, true)).join(' ')}`);
    }
    lines.push(...issue23Lines(scenario));
    if (isInstanceIncident(scenario)) {
      // The load per instance, as each instance's own server counted it (SPEC X5).
      const who = scenario.instances.map((b, i) => `#${i + 1} ${b}`).join(', ');
      lines.push(`  requests each supplier instance received (${who}):`);
      for (const m of scenario.stacks) {
        const each = m.supplier.perInstance.map((n, i) => `#${i + 1} ${n}`).join('  ');
        lines.push(`  ${pad(m.stack, 10)}${each}`);
      }
    }
  }
  lines.push(
    '',
    'supplier load = requests sent to the supplier ÷ user checkouts; wasted work = time services kept working',
    'after the user gave up ((≥): still running when measured); catalog = the route that never uses the supplier.',
  );
  const said = verdicts(result);
  if (said.length > 0)
    lines.push('', 'What this run shows:', ...said.map((v) => `  ${v.holds ? '✓' : '✗'} ${v.text}`));
  return `${lines.join('\n')}\n`;
}
