import type { DemoResult } from '../run/demo.js';
import { esc, ms, pct, STACK_COLORS, times } from './format.js';
import { isInstanceIncident, type ScenarioSummary, type StackMetrics } from './summary.js';
import { histogramChart, lineChart, type Series } from './svg.js';
import { verdicts } from './verdicts.js';

/**
 * `prazo-report.html`: one self-contained page (inline CSS and SVG drawn by `svg.ts`; no script, no
 * CDN, no network) with, per scenario, the numbers of the terminal table and four charts: the
 * latency users saw on each route (distribution) and, over time, the load reaching the supplier and
 * the gateway pool's busy connections.
 */
const CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1140px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 4px;border-top:1px solid #ddd;padding-top:16px}
p.lead{color:#555;margin:4px 0 12px}table{border-collapse:collapse;margin:8px 0}
th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}th:first-child,td:first-child{text-align:left}
th{font-weight:600;color:#444}.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px}
svg.chart{max-width:100%;height:auto;font-size:11px;fill:#333}svg .axis-label{font-size:11px;fill:#555}
figure{margin:0}figcaption{font-weight:600;margin:4px 0 2px 8px;color:#333}
ul.verdicts{list-style:none;padding:0}ul.verdicts li{margin:4px 0}.ok{color:#2ca02c}.ko{color:#d62728}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
`;

function metricsTable(stacks: readonly StackMetrics[]): string {
  const head =
    '<tr><th>stack</th><th>supplier load</th><th>wasted work</th><th>answers ≤ deadline</th><th>catalog ok</th>' +
    '<th>catalog p99</th><th>pool busy (mean / max of N)</th><th>user p50</th><th>user p99</th></tr>';
  const rows = stacks
    .map(
      (m) =>
        `<tr><td><span class="swatch" style="background:${STACK_COLORS[m.stack]}"></span>${m.stack}</td>` +
        `<td>${times(m.supplier.amplification)} <small>(${m.supplier.load} / ${m.checkout.requests})</small></td>` +
        `<td>${ms(m.wasted.ms)}${m.wasted.stillRunning > 0 ? ' (≥)' : ''}</td><td>${pct(m.checkout.withinDeadlinePct)}</td>` +
        `<td>${pct(m.catalog.successPct)}</td><td>${ms(m.catalog.p99Ms)}</td>` +
        `<td>${m.pool.meanBusy} / ${m.pool.maxBusy} of ${m.pool.connections}</td>` +
        `<td>${ms(m.checkout.p50Ms)}</td><td>${ms(m.checkout.p99Ms)}</td></tr>`,
    )
    .join('');
  return `<table class="metrics">${head}${rows}</table>`;
}

function charts(scenario: ScenarioSummary, result: DemoResult): string {
  const { series } = scenario;
  const step = series.bucketMs / 1000;
  const id = (what: string): string => `${what}-${scenario.name}`;
  const per = (pick: (s: (typeof series.stacks)[number]) => number[]): Series[] =>
    series.stacks.map((s) => ({ name: s.stack, color: STACK_COLORS[s.stack], values: pick(s) }));
  const offered = series.stacks[0]?.offered ?? [];
  return [
    histogramChart({
      id: id('checkout-latency'),
      title: 'Checkout: what users waited',
      xLabel: 'latency seen by the user (ms, log scale)',
      yLabel: '% of checkouts',
      edges: series.histogramEdges,
      series: per((s) => s.checkoutHistogram),
      markMs: result.settings.userDeadlineMs,
    }),
    histogramChart({
      id: id('catalog-latency'),
      title: 'Catalog (independent route): what users waited',
      xLabel: 'latency seen by the user (ms, log scale)',
      yLabel: '% of catalog requests',
      edges: series.histogramEdges,
      series: per((s) => s.catalogHistogram),
      markMs: result.settings.userDeadlineMs,
    }),
    lineChart({
      id: id('supplier-load'),
      title: 'Load reaching the supplier over time',
      xLabel: 'seconds since the load started',
      yLabel: 'requests / s',
      xStepS: step,
      series: [
        { name: 'users (checkout)', color: '#7f7f7f', values: offered, dashed: true },
        ...per((s) => s.supplier),
      ],
    }),
    lineChart({
      id: id('pool'),
      title: 'Gateway → orders pool: busy connections',
      xLabel: 'seconds since the load started',
      yLabel: 'busy connections',
      xStepS: step,
      series: per((s) => s.poolBusy),
      marks: [
        { y: result.settings.poolConnections, label: `pool size N = ${result.settings.poolConnections}` },
      ],
    }),
  ]
    .map((svg, i) => `<figure><figcaption>${TITLES[i]}</figcaption>${svg}</figure>`)
    .join('')
    .concat(isInstanceIncident(scenario) ? instanceChart(scenario) : '');
}

/** Instance 1 solid, 2 dashed, 3 dotted, …: the stacks keep their colours, the instances their strokes. */
const INSTANCE_DASHES = ['', '7 3', '2 3', '9 3 2 3', '4 4'];

/**
 * The load per supplier instance over time (SPEC X5): requests each instance's own server received
 * per second, one line per instance and stack. What each instance did is said in the caption and in
 * the chart's description, with what each one received under each stack, so the chart reads without
 * the picture too.
 */
function instanceChart(scenario: ScenarioSummary): string {
  const { series } = scenario;
  const lines: Series[] = series.stacks.flatMap((s) =>
    s.instances.map(({ instance, perSecond }) => ({
      name: `${s.stack} · #${instance + 1}`,
      color: STACK_COLORS[s.stack],
      values: perSecond,
      dash: INSTANCE_DASHES[instance % INSTANCE_DASHES.length]!,
      data: { stack: s.stack, instance: String(instance + 1), values: perSecond.join(' ') },
    })),
  );
  const who = scenario.instances.map((b, i) => `#${i + 1} ${b}`).join(', ');
  const received = scenario.stacks
    .map((m) => `${m.stack}: ${m.supplier.perInstance.map((n, i) => `#${i + 1} received ${n}`).join(', ')}`)
    .join('; ');
  const title = 'Load per supplier instance over time';
  const svg = lineChart({
    id: `instances-${scenario.name}`,
    title,
    xLabel: 'seconds since the load started',
    yLabel: 'requests / s received',
    xStepS: series.bucketMs / 1000,
    series: lines,
    description: `Requests per second each supplier instance's own server received (${who}). ${received}.`,
  });
  return (
    `<figure class="instances"><figcaption>${title}: what each instance's server received (${esc(who)})</figcaption>` +
    `${svg}<p class="lead">${esc(received)}</p></figure>`
  );
}

const TITLES = [
  'Checkout (reaches the supplier): what users waited',
  'Catalog (never uses the supplier): what users waited',
  'Load reaching the supplier over time',
  'Gateway → orders pool: busy connections over time',
];

export function renderHtml(result: DemoResult): string {
  const s = result.settings;
  const c = result.calibration;
  const calibration = c
    ? `<table class="calibration"><tr><th>hop</th><th>healthy p50</th><th>p95</th><th>p99</th><th>prazo timeout</th><th>attempts</th></tr>${(
        ['orders', 'inventory', 'supplier'] as const
      )
        .map(
          (h) =>
            `<tr><td>→ ${h}</td><td>${c[h].p50Ms} ms</td><td>${c[h].p95Ms} ms</td><td>${c[h].measuredP99Ms} ms</td><td>${c[h].responseMs} ms${h === 'supplier' ? ' = ⌈p99 × 1.4⌉' : ` (waits for the supplier's hedge: ${c.supplier.hedgeMs} + ${c.supplier.measuredP99Ms} ms)`}</td><td>${c[h].attempts}</td></tr>`,
        )
        .join('')}</table>`
    : '';
  const said = verdicts(result)
    .map(
      (v) =>
        `<li class="${v.holds ? 'ok' : 'ko'}">${v.holds ? '✓' : '✗'} <span style="color:#222">${esc(v.text)}</span></li>`,
    )
    .join('');
  const scenarios = result.scenarios
    .map(
      (sc) =>
        `<section class="scenario" id="${esc(sc.name)}"><h2>${esc(sc.title)}</h2><p class="lead">${esc(sc.description)}${sc.loadMs !== s.loadMs ? ` (${ms(sc.loadMs)} per stack)` : ''}</p>` +
        `${metricsTable(sc.stacks)}<div class="charts">${charts(sc, result)}</div></section>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>prazo demo report</title><style>${CSS}</style></head><body>
<h1>prazo: the incident demo</h1>
<p class="lead">user → gateway → orders → inventory → supplier × ${s.supplierInstances}, each a Node process on 127.0.0.1.
${s.checkoutRate} checkout/s (reaches the supplier) and ${s.catalogRate} catalog/s (does not), open loop, ${ms(s.loadMs)} per stack and scenario;
the user gives up after ${ms(s.userDeadlineMs)}; both routes share the gateway's pool of ${s.poolConnections} connections to orders.
Stacks: ${s.stacks.map((n) => esc(n)).join(', ')}. Run took ${ms(result.durationMs)}.</p>
${calibration}
<ul class="verdicts">${said}</ul>
${scenarios}
<p class="lead">supplier load = requests sent to the supplier (every attempt, retry and hedge; refused connections too) ÷ user checkouts.
wasted work = time gateway, orders, inventory and supplier kept working on a request after its user had given up; (≥) when some was still running at the end.</p>
</body></html>
`;
}
