import { machineLine } from './machine.mjs';

/** The markdown report printed to stdout (and pasted into bench/README.md). */

const fmt = (v, digits = 2) => {
  if (v === null || v === undefined) return '–';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return Number(v.toFixed(digits)).toString();
};
const range = (s, digits) => `${fmt(s.median, digits)} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
const bytes = (b) =>
  b === null ? '–' : b >= 1 << 20 ? `${fmt(b / 2 ** 20, 1)} MiB` : `${fmt(b / 1024, 1)} KiB`;
const row = (cells) => `| ${cells.join(' | ')} |`;
const head = (cells) => [row(cells), row(cells.map(() => '---'))];

export function renderMarkdown(results) {
  const out = [`# prazo benchmarks (${results.mode})`, ''];
  out.push(
    `Machine: ${machineLine(results.machine)}. Run: ${results.startedAt}, ${fmt(results.durationMs / 1000, 0)} s.`,
  );
  out.push(
    'Figures are median (min–max) over runs; ratios are taken per round against bare undici.request.',
    '',
  );
  if (results.http) out.push(...httpTable(results.http), '');
  if (results.micro) out.push(...microTable(results.micro), '');
  if (results.memory) out.push(...memoryTable(results.memory), '');
  if (results.effect) out.push(...effectTables(results.effect), '');
  if (results.calibrate) out.push(...effectTables(results.calibrate), '');
  out.push(...goalsTable(results.goals));
  return out.join('\n');
}

function httpTable(http) {
  const s = http.settings;
  const lines = [
    `## Hot path: loopback keep-alive GET, concurrency ${s.concurrency}, ${s.runs} run(s) × ${s.durationMs} ms per variant`,
    '',
    ...head([
      'variant',
      'req/s',
      '× undici',
      'p50 ms',
      '× undici',
      'p99 ms',
      '× undici',
      'CPU µs/req',
      '× undici',
    ]),
  ];
  for (const [name, v] of Object.entries(http.variants)) {
    if (v.skipped) {
      lines.push(row([name, `not available: ${v.skipped}`, '', '', '', '', '', '', '']));
      continue;
    }
    const label = v.errors > 0 ? `${name} (${v.errors} errors)` : name;
    lines.push(
      row([
        label,
        range(v.reqPerSec, 0),
        range(v.ratio.reqPerSec),
        range(v.p50Ms),
        range(v.ratio.p50Ms),
        range(v.p99Ms),
        range(v.ratio.p99Ms),
        range(v.cpuUsPerReq, 1),
        range(v.ratio.cpuUsPerReq),
      ]),
    );
  }
  const notes = Object.entries(http.variants)
    .filter(([, v]) => v.stats)
    .map(([name, v]) => {
      const { requests, ...counts } = v.stats;
      const said = Object.entries(counts).map(([k, n]) =>
        typeof n === 'boolean' ? `${k} ${n ? 'on' : 'OFF'}` : `${fmt(n, 0)} ${k}`,
      );
      return `${name}: ${said.join(', ')} over ${fmt(requests, 0)} measured requests`;
    });
  if (notes.length > 0)
    lines.push(
      '',
      `Extra attempts sent by the resilient variants (hedging armed, meant not to fire): ${notes.join('; ')}.`,
    );
  if (http.pairs?.length > 0) lines.push('', ...pairsTable(http.pairs));
  return lines;
}

/** Like for like: each prazo variant against the same call without prazo, ratios within each round. */
function pairsTable(pairs) {
  const lines = [
    '### Side by side: each variant ÷ the same call without prazo (per round)',
    '',
    ...head(['variant', '÷ against', 'req/s ×', 'CPU µs/req ×', 'p50 ×']),
  ];
  for (const p of pairs) {
    const against = `${p.against} (${p.why})`;
    if (p.unavailable) lines.push(row([p.variant, against, `not available: ${p.unavailable}`, '', '']));
    else
      lines.push(
        row([p.variant, against, range(p.ratio.reqPerSec), range(p.ratio.cpuUsPerReq), range(p.ratio.p50Ms)]),
      );
  }
  return lines;
}

function microTable(micro) {
  const base = micro.cases.find((c) => c.name === 'await (bare)')?.nsPerOp?.median;
  const lines = [
    `## Micro: ns per operation, ${micro.settings.runs} process(es) per case`,
    '',
    ...head(['case', 'ns/op', '× bare await', 'what it is']),
  ];
  for (const c of micro.cases) {
    if (c.skipped) lines.push(row([c.name, 'skipped', '', c.skipped]));
    else {
      const times = base ? fmt(c.nsPerOp.median / base, 1) : '–';
      lines.push(
        row([`${c.name}${c.kind === 'baseline' ? ' (baseline)' : ''}`, range(c.nsPerOp, 1), times, c.about]),
      );
    }
  }
  return lines;
}

function memoryTable(memory) {
  const lines = [
    `## Memory: one retry budget after a full window (${fmt(memory.settings.windowMs / 1000, 1)} s), one event = recordOriginal + tryConsume`,
    '',
    ...head(['design', 'events/s', 'events in window', 'retained heap', 'steady-state ns/event']),
  ];
  for (const r of memory.rows) {
    if (r.skipped) lines.push(row([r.design, 'skipped', '', r.skipped, '']));
    else
      lines.push(
        row([
          r.design === 'seed' ? "seed's array of timestamps" : 'prazo createRetryBudget',
          fmt(r.eventsPerSecond, 0),
          fmt(r.eventsInWindow, 0),
          `${bytes(r.retainedBytes.median)} (${bytes(r.retainedBytes.min)}–${bytes(r.retainedBytes.max)})`,
          range(r.steadyNsPerEvent, 1),
        ]),
      );
  }
  return lines;
}

function effectTables(effect) {
  const lines = [];
  for (const section of effect.sections) {
    lines.push(`## ${section.title}`, '', section.setup, '');
    if (section.skipped) {
      lines.push(`skipped: ${section.skipped}`, '');
      continue;
    }
    lines.push(...head(section.columns));
    for (const r of section.rows) lines.push(row(r.map((c) => (typeof c === 'number' ? fmt(c) : c))));
    lines.push('');
  }
  return lines;
}

function goalsTable(goals) {
  const lines = ['## Goals', '', ...head(['goal', 'target', 'achieved', 'verdict', 'context'])];
  for (const g of goals) {
    const verdict = g.met
      ? 'met'
      : g.unavailable
        ? 'not available'
        : g.achieved === null
          ? 'not measured'
          : `MISSED by ${fmt(g.shortBy, 3)}`;
    const target = typeof g.goal === 'number' ? `≥ ${g.goal}` : g.goal;
    lines.push(row([g.what, target, fmt(g.achieved, 3), verdict, g.note ?? '']));
  }
  if (goals.length === 0) lines.push(row(['(none measured in this run)', '', '', '', '']));
  const missed = goals.filter((g) => !g.met && !g.unavailable);
  if (missed.length > 0) {
    lines.push(
      '',
      `${missed.length} goal(s) missed. A miss with a CPU ratio near 1 and wide req/s ranges points at the ` +
        'machine (see the load average above); bench/README.md explains each figure.',
    );
  }
  return lines;
}
