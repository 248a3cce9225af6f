import type { DemoResult } from '../run/demo.js';
import { esc, ms, pct, STACK_COLORS, times } from './format.js';
import { isInstanceIncident, type ScenarioSummary, type StackMetrics } from './summary.js';
import { histogramChart, lineChart, type Series } from './svg.js';
import { verdicts } from './verdicts.js';
import { waterfallPanels } from './waterfall.js';

/**
 * `prazo-report.html`: one self-contained page (inline CSS and SVG drawn by `svg.ts`; no script, no
 * CDN, no network) with, per scenario, the numbers of the terminal table and four charts: the
 * latency users saw on each route (distribution) and, over time, the load reaching the supplier and
 * the gateway pool's busy connections; a fifth beside the supplier's load when a stack throttles
 * (the throttle's refused share and the load it let through, issue 23), and one for the load per
 * supplier instance in the instance incidents. Below them, per stack, one checkout's trace waterfall
 * (`waterfall.ts`, issue #26).
 */
const CSS = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1140px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 4px;border-top:1px solid #ddd;padding-top:16px}
p.lead{color:#555;margin:4px 0 12px}table{border-collapse:collapse;margin:8px 0}
th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}th:first-child,td:first-child{text-align:left}
th{font-weight:600;color:#444;white-space:normal;vertical-align:bottom}.table-wrap{overflow-x:auto}.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:12px}
svg.chart{max-width:100%;height:auto;font-size:11px;fill:#333}svg .axis-label{font-size:11px;fill:#555}
figure{margin:0}figcaption{font-weight:600;margin:4px 0 2px 8px;color:#333}
ul.verdicts{list-style:none;padding:0}ul.verdicts li{margin:4px 0}.ok{color:#2ca02c}.ko{color:#d62728}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
.waterfalls{margin-top:12px}svg.waterfall{max-width:100%;height:auto;font-size:11px;fill:#333}svg.waterfall .axis-label{font-size:11px;fill:#555}
.waterfall-panel{margin:8px 0 16px}p.no-trace{color:#777;font-style:italic;margin:4px 8px}
`;

function metricsTable(scenario: ScenarioSummary): string {
  const { stacks } = scenario;
  const throttles = (m: StackMetrics): boolean =>
    scenario.series.stacks.some((s) => s.stack === m.stack && s.throttle !== undefined);
  const recovery = stacks.some((m) => m.recovery !== undefined);
  const head =
    '<tr><th>stack</th><th>supplier load</th><th>wasted work</th><th>answers ≤ deadline</th><th>catalog ok</th>' +
    '<th>catalog p99</th><th>pool busy (mean / max of N)</th><th>user p50</th><th>user p99</th>' +
    `<th>failed p50</th><th>throttle refused</th>${recovery ? '<th>recovery</th>' : ''}</tr>`;
  const rows = stacks
    .map(
      (m) =>
        `<tr><td><span class="swatch" style="background:${STACK_COLORS[m.stack]}"></span>${m.stack}</td>` +
        `<td>${times(m.supplier.amplification)} <small>(${m.supplier.load} / ${m.checkout.requests})</small></td>` +
        `<td>${ms(m.wasted.ms)}${m.wasted.stillRunning > 0 ? ' (≥)' : ''}</td><td>${pct(m.checkout.withinDeadlinePct)}</td>` +
        `<td>${pct(m.catalog.successPct)}</td><td>${ms(m.catalog.p99Ms)}</td>` +
        `<td>${m.pool.meanBusy} / ${m.pool.maxBusy} of ${m.pool.connections}</td>` +
        `<td>${ms(m.checkout.p50Ms)}</td><td>${ms(m.checkout.p99Ms)}</td><td>${ms(m.checkout.failedP50Ms)}</td>` +
        `<td>${throttles(m) ? `${pct(m.throttled.sharePct)} <small>(${m.throttled.refused})</small>` : '—'}</td>` +
        (recovery ? `<td>${recoveryText(m)}</td>` : '') +
        '</tr>',
    )
    .join('');
  return `<div class="table-wrap"><table class="metrics">${head}${rows}</table></div>`;
}

/** `recover`: how long after the supplier's return checkouts were ≥ 99% within the deadline again. */
export function recoveryText(m: StackMetrics): string {
  const r = m.recovery;
  if (r === undefined) return '—';
  if (r.recoveryMs === undefined) return 'not before the load ended';
  return `${ms(r.recoveryMs)} at ${times(r.load)} the load`;
}

function charts(scenario: ScenarioSummary, result: DemoResult): string {
  const { series } = scenario;
  const step = series.bucketMs / 1000;
  const id = (what: string): string => `${what}-${scenario.name}`;
  const per = (pick: (s: (typeof series.stacks)[number]) => number[]): Series[] =>
    series.stacks.map((s) => ({ name: s.stack, color: STACK_COLORS[s.stack], values: pick(s) }));
  const offered = series.stacks[0]?.offered ?? [];
  const figure = (caption: string, svg: string): string =>
    `<figure><figcaption>${esc(caption)}</figcaption>${svg}</figure>`;
  return [
    figure(
      TITLES.checkout,
      histogramChart({
        id: id('checkout-latency'),
        title: 'Checkout: what users waited',
        xLabel: 'latency seen by the user (ms, log scale)',
        yLabel: '% of checkouts',
        edges: series.histogramEdges,
        series: per((s) => s.checkoutHistogram),
        markMs: result.settings.userDeadlineMs,
      }),
    ),
    figure(
      TITLES.catalog,
      histogramChart({
        id: id('catalog-latency'),
        title: 'Catalog (independent route): what users waited',
        xLabel: 'latency seen by the user (ms, log scale)',
        yLabel: '% of catalog requests',
        edges: series.histogramEdges,
        series: per((s) => s.catalogHistogram),
        markMs: result.settings.userDeadlineMs,
      }),
    ),
    figure(
      TITLES.supplier,
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
    ),
    throttleChart(scenario),
    figure(
      TITLES.pool,
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
    ),
  ]
    .join('')
    .concat(isInstanceIncident(scenario) ? instanceChart(scenario) : '');
}

/**
 * The adaptive throttle over time (issue 23), beside the load reaching the supplier: for each stack
 * whose client throttles (prazo), per bucket, the calls inventory's client refused locally and the
 * requests it sent to the supplier, both as % of the checkouts that reached inventory in the bucket
 * (all three counted by inventory, on its clock). While the
 * supplier fails the refused share rises and the load falls to the probes the throttle lets through;
 * when it returns, both swap back. Empty (no figure) when no stack of the scenario throttles.
 */
function throttleChart(scenario: ScenarioSummary): string {
  const throttling = scenario.series.stacks.filter((s) => s.throttle !== undefined);
  if (throttling.length === 0) return '';
  const lines: Series[] = throttling.flatMap((s) => [
    {
      name: `${s.stack} · refused`,
      color: STACK_COLORS[s.stack],
      values: s.throttle!.refusedPct,
      data: { stack: s.stack, kind: 'refused', values: s.throttle!.refusedPct.join(' ') },
    },
    {
      name: `${s.stack} · to the supplier`,
      color: STACK_COLORS[s.stack],
      values: s.throttle!.supplierPct,
      dash: '5 3',
      data: { stack: s.stack, kind: 'supplier', values: s.throttle!.supplierPct.join(' ') },
    },
  ]);
  const said = throttling
    .map((s) => {
      const m = scenario.stacks.find((x) => x.stack === s.stack);
      return m === undefined
        ? s.stack
        : `${s.stack}: ${m.throttled.refused} call(s) refused (${pct(m.throttled.sharePct)} of checkouts), ${times(m.supplier.amplification)} the checkouts sent to the supplier`;
    })
    .join('; ');
  const svg = lineChart({
    id: `throttle-${scenario.name}`,
    title: TITLES.throttle,
    xLabel: 'seconds since the load started',
    yLabel: '% of the checkouts',
    xStepS: scenario.series.bucketMs / 1000,
    series: lines,
    marks: [{ y: 100, label: 'one per checkout' }],
    description:
      "Per time bucket, as a share of the checkouts that reached inventory in it: the calls inventory's client refused " +
      `locally (its adaptive throttle), and the requests it sent to the supplier. ${said}.`,
  });
  return `<figure class="throttle"><figcaption>${esc(TITLES.throttle)}</figcaption>${svg}<p class="lead">${esc(said)}</p></figure>`;
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

const TITLES = {
  checkout: 'Checkout (reaches the supplier): what users waited',
  catalog: 'Catalog (never uses the supplier): what users waited',
  supplier: 'Load reaching the supplier over time',
  throttle: 'Throttle: calls refused and load reaching the supplier, % of checkouts',
  pool: 'Gateway → orders pool: busy connections over time',
} as const;

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
        `${metricsTable(sc)}<div class="charts">${charts(sc, result)}</div>${waterfallPanels(sc.name, sc.traces, s.stacks)}</section>`,
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
wasted work = time gateway, orders, inventory and supplier kept working on a request after its user had given up; (≥) when some was still running at the end.
failed p50 = the median wait of the checkouts that failed. throttle refused = calls inventory's client refused locally (its adaptive throttle), % of checkouts.
recovery (<code>recover</code>) = from the supplier's return until checkouts were ≥ 99% within the deadline over every 1 s window, and the supplier load over that time.</p>
</body></html>
`;
}
