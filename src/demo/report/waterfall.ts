import { DEMO_TRACE_LIMITS } from '../trace/limits.js';
import {
  REPRESENTATIVE_RULE,
  type TraceChoice,
  type Waterfall,
  type WaterfallSpan,
} from '../trace/stitch.js';
import { esc, ms, STACK_COLORS } from './format.js';
import { niceTicks } from './svg.js';

/**
 * The trace waterfall of the HTML report (issue #26 item 2): one checkout across gateway → orders →
 * inventory → supplier, a row per span in the order they started, drawn on one time axis from the
 * checkout's arrival at the gateway. Where the time went: each hop's server span, prazo's call (its
 * decisions as marks), each attempt, retry and hedge with its outcome. Where it ran out: the
 * deadline (prazo's, as the gateway read it) and the user's give-up as vertical lines, and the span
 * the deadline ran out in outlined. Inline SVG like the other charts (`svg.ts`), every row with its
 * `<title>`, the whole with a `<desc>` that says it in words; a trace that could not be stitched is
 * a panel that says "no trace captured", never a broken report.
 */

const W = 1100;
const LABEL_W = 440;
const RIGHT = 16;
const TOP = 40;
const ROW = 18;
const BOTTOM = 38;
const PLOT_X = LABEL_W + 8;
const PLOT_W = W - PLOT_X - RIGHT;

/** A colour per service of the chain. */
export const SERVICE_COLORS: Readonly<Record<string, string>> = {
  gateway: '#1f77b4',
  orders: '#9467bd',
  inventory: '#8c564b',
  supplier: '#17becf',
};
const OUTCOME_COLORS: Readonly<Record<WaterfallSpan['outcome'], string>> = {
  ok: '#2ca02c',
  error: '#d62728',
  timeout: '#ff7f0e',
  cancelled: '#7f7f7f',
  refused: '#d62728',
  open: '#bbbbbb',
};

const f = (n: number): string => (Math.round(n * 10) / 10).toString();
const serviceOf = (span: WaterfallSpan): string => span.service.split(' ')[0] ?? span.service;
const colorOf = (span: WaterfallSpan): string => SERVICE_COLORS[serviceOf(span)] ?? '#555';
const duration = (span: WaterfallSpan): number => Math.max(0, span.endMs - span.startMs);
const dur = (x: number): string => (x < 10 ? `${Math.round(x * 10) / 10} ms` : ms(x));

/** What a span's outcome says, in words. */
function outcomeText(span: WaterfallSpan): string {
  const why = span.error === undefined ? '' : ` (${span.error})`;
  switch (span.outcome) {
    case 'ok':
      return span.status === undefined ? 'ok' : `${span.status}`;
    case 'error':
      return span.status !== undefined && span.error === undefined ? `${span.status}` : `error${why}`;
    case 'timeout':
      // naive's own message says "timeout after 3000 ms": the word once, the number kept.
      if (span.kind === 'server' && span.status !== undefined) return `timeout ${span.status}`;
      return span.error !== undefined && /timeout/i.test(span.error)
        ? `timeout (${span.error.replace(/^.*?timeout\s*/i, '') || span.error})`
        : `timeout${why}`;
    case 'cancelled':
      return span.kind === 'server' ? 'caller hung up, no answer' : `cancelled${why}`;
    case 'refused':
      return `refused locally${why}`;
    case 'open':
      return 'still running at the cut-off';
  }
}

/** The row's label: service, operation, attempt n, outcome, ms. */
export function spanLabel(span: WaterfallSpan): string {
  const took = dur(duration(span));
  if (span.kind === 'server') return `${span.service} ${span.name} · ${outcomeText(span)} · ${took}`;
  if (span.kind === 'call') return `${span.service}: call ${span.name} · ${outcomeText(span)} · ${took}`;
  const kind =
    span.attemptKind === undefined || span.attemptKind === 'original' ? '' : ` (${span.attemptKind})`;
  return `${span.service} → ${span.name} · attempt ${span.attempt ?? '?'}${kind} · ${outcomeText(span)} · ${took}`;
}

/** The row's `<title>`: the label and every number the span carries. */
function spanTitle(
  span: WaterfallSpan,
  ranOut: boolean,
  how: string | undefined,
  reached: number | undefined,
): string {
  const parts = [
    spanLabel(span),
    `from ${dur(span.startMs)} to ${dur(span.endMs)} after the checkout arrived`,
  ];
  if (reached !== undefined) parts.push(`${span.name} received it ${dur(reached)} after the attempt started`);
  if (span.timeLeftMs !== undefined) parts.push(`${span.timeLeftMs} ms of the deadline left at its start`);
  if (span.timeoutMs !== undefined) parts.push(`attempt timeout ${span.timeoutMs} ms`);
  if (span.instance !== undefined) parts.push(`instance ${span.instance}`);
  if (span.deadlineMs !== undefined) parts.push(`deadline read at ${dur(span.deadlineMs)}`);
  if (ranOut) parts.push(how === 'failed' ? 'the failure started here' : 'the deadline ran out here');
  return parts.join('; ');
}

const RAN_OUT_TEXT = {
  deadline: 'the deadline ran out here',
  'gave-up': 'the user gave up here',
  failed: 'the failure started here',
} as const;

/** An attempt whose request reached the next hop this late waited before it was sent: said in words. */
const LATE_ARRIVAL_MS = 100;

const RAN_OUT_SENTENCE = {
  deadline: 'The deadline ran out in',
  'gave-up': 'The user gave up while waiting in',
  failed: 'The failure started in',
} as const;

/** The waterfall's story in one or two sentences (the `<desc>` and the caption below it). */
export function waterfallSummary(trace: Waterfall): string {
  const parts: string[] = [];
  const hops = trace.hops.join(' → ');
  parts.push(
    `One checkout (trace …${trace.traceId.slice(-8)}) ${trace.failed ? 'failed' : 'answered'}: the gateway worked on it ${dur(trace.durationMs)}; ${trace.spans.length} spans across ${hops}.`,
  );
  const marked =
    trace.ranOut === undefined ? undefined : trace.spans.find((s) => s.spanId === trace.ranOut!.spanId);
  if (marked !== undefined && trace.ranOut !== undefined) {
    parts.push(
      `${RAN_OUT_SENTENCE[trace.ranOut.how]} ${spanLabel(marked)} (from ${dur(marked.startMs)} to ${dur(marked.endMs)}).`,
    );
  }
  const late = trace.spans
    .map((s) => ({ s, reached: reachedAfter(trace, s) }))
    .filter((x) => x.reached !== undefined && x.reached >= LATE_ARRIVAL_MS)[0]; // the first such attempt
  if (late !== undefined) {
    parts.push(
      `${late.s.service}'s attempt ${late.s.attempt ?? ''} reached ${late.s.name} only ${dur(late.reached!)} after it started (it waited to be sent).`,
    );
  }
  if (trace.deadlineMs !== undefined) parts.push(`Deadline at ${dur(trace.deadlineMs)}.`);
  if (trace.giveUpMs !== undefined) {
    const last = Math.max(...trace.spans.map((s) => s.endMs));
    parts.push(
      last > trace.giveUpMs + 1
        ? `The user gave up at ${dur(trace.giveUpMs)}; work on it went on until ${dur(last)}.`
        : `The user gives up at ${dur(trace.giveUpMs)}.`,
    );
  }
  if (trace.dropped > 0) parts.push(`${trace.dropped} span(s) not kept.`);
  return parts.join(' ');
}

/**
 * The mark of the span where the time ran out: to the right of its bar when it fits, else inside
 * the bar on a white ground (never over the labels' column).
 */
function ranOutMark(how: keyof typeof RAN_OUT_TEXT, x0: number, width: number, y: number): string {
  const right = `◀ ${RAN_OUT_TEXT[how]}`;
  const wide = right.length * 6.2;
  if (x0 + width + 6 + wide < W - RIGHT) {
    return `<text class="ran-out-label" x="${f(x0 + width + 6)}" y="${y + 13}" fill="#d62728" font-weight="600">${esc(right)}</text>`;
  }
  const inside = RAN_OUT_TEXT[how];
  const at = Math.max(x0 + 6, Math.min(x0 + width - inside.length * 6.2 - 10, x0 + 40));
  return (
    `<rect x="${f(at - 3)}" y="${y + 3}" width="${f(inside.length * 6.2 + 6)}" height="${ROW - 6}" fill="#fff" fill-opacity="0.9"/>` +
    `<text class="ran-out-label" x="${f(at)}" y="${y + 13}" fill="#d62728" font-weight="600">${esc(inside)}</text>`
  );
}

/** How long after an attempt started the next hop received its request (a queue for a connection, the wire). */
function reachedAfter(trace: Waterfall, span: WaterfallSpan): number | undefined {
  if (span.kind !== 'attempt') return undefined;
  const starts = trace.spans
    .filter((s) => s.kind === 'server' && s.parentId === span.spanId)
    .map((s) => s.startMs);
  return starts.length === 0 ? undefined : Math.min(...starts) - span.startMs;
}

/** One checkout's waterfall as an SVG. */
export function waterfallChart(id: string, title: string, trace: Waterfall): string {
  const all = trace.spans;
  const rows = all.slice(0, DEMO_TRACE_LIMITS.maxRows);
  const hidden = all.length - rows.length;
  const height = TOP + rows.length * ROW + BOTTOM + (hidden > 0 ? ROW : 0);
  const end = Math.max(1, ...all.map((s) => s.endMs), trace.deadlineMs ?? 0, trace.giveUpMs ?? 0);
  const ticks = niceTicks(end, 8);
  const tMax = ticks[ticks.length - 1]!;
  const x = (t: number): number => PLOT_X + (Math.max(0, Math.min(t, tMax)) / tMax) * PLOT_W;
  const plotBottom = TOP + rows.length * ROW;
  const grid = ticks
    .map(
      (t) =>
        `<line x1="${f(x(t))}" y1="${TOP - 4}" x2="${f(x(t))}" y2="${plotBottom}" stroke="#eee"/>` +
        `<text x="${f(x(t))}" y="${plotBottom + 14}" text-anchor="middle">${t >= 1000 ? `${t / 1000}s` : t}</text>`,
    )
    .join('');
  const ranOutId = trace.ranOut?.spanId;
  const body = rows
    .map((span, i) => {
      const y = TOP + i * ROW;
      const x0 = x(span.startMs);
      const width = Math.max(2, x(span.endMs) - x0);
      const marked = span.spanId === ranOutId;
      const opacity = span.kind === 'server' ? 0.85 : span.kind === 'call' ? 0.35 : 0.6;
      const label = spanLabel(span);
      const shown = label.length > 70 ? `${label.slice(0, 69)}…` : label;
      const cap = `<rect class="outcome" x="${f(x0 + width - Math.min(3, width))}" y="${y + 3}" width="${f(Math.min(3, width))}" height="${ROW - 6}" fill="${OUTCOME_COLORS[span.outcome]}"/>`;
      const deadlineTick =
        span.deadlineMs === undefined
          ? ''
          : `<line class="span-deadline" x1="${f(x(span.deadlineMs))}" y1="${y + 1}" x2="${f(x(span.deadlineMs))}" y2="${y + ROW - 1}" stroke="#333" stroke-width="1.5"><title>${esc(`${span.service}'s deadline: ${dur(span.deadlineMs)}`)}</title></line>`;
      const events = (span.events ?? [])
        .map((e) => {
          const ex = x(e.atMs);
          const cy = y + ROW / 2;
          return `<path class="event" data-event="${esc(e.name)}" d="M${f(ex)},${f(cy - 5)}L${f(ex + 4)},${f(cy)}L${f(ex)},${f(cy + 5)}L${f(ex - 4)},${f(cy)}Z" fill="#222"><title>${esc(`${e.name} at ${dur(e.atMs)}${e.detail ? `: ${e.detail}` : ''}`)}</title></path>`;
        })
        .join('');
      const mark = marked ? ranOutMark(trace.ranOut!.how, x0, width, y) : '';
      return (
        `<g class="span${marked ? ' ran-out' : ''}" data-span="${esc(span.spanId)}" data-service="${esc(span.service)}" data-kind="${span.kind}" data-outcome="${span.outcome}" data-start="${span.startMs}" data-end="${span.endMs}" data-depth="${span.depth}"${span.attempt === undefined ? '' : ` data-attempt="${span.attempt}"`}>` +
        `<title>${esc(spanTitle(span, marked, trace.ranOut?.how, reachedAfter(trace, span)))}</title>` +
        `<text x="${4 + Math.min(span.depth, 8) * 10}" y="${y + 13}">${esc(shown)}</text>` +
        `<rect class="bar" x="${f(x0)}" y="${y + 3}" width="${f(width)}" height="${ROW - 6}" fill="${colorOf(span)}" fill-opacity="${opacity}"${marked ? ' stroke="#d62728" stroke-width="2.5"' : span.kind === 'call' ? ` stroke="${colorOf(span)}"` : ''}/>` +
        `${cap}${deadlineTick}${events}${mark}</g>`
      );
    })
    .join('');
  const line = (cls: string, t: number | undefined, text: string, dy: number): string =>
    t === undefined
      ? ''
      : `<g class="${cls}" data-ms="${t}"><line x1="${f(x(t))}" y1="${TOP - 16 + dy}" x2="${f(x(t))}" y2="${plotBottom}" stroke="${cls === 'deadline' ? '#d62728' : '#555'}" stroke-width="1.5" stroke-dasharray="4 3"/>` +
        `<text x="${f(x(t) - 4)}" y="${TOP - 20 + dy}" text-anchor="end" fill="${cls === 'deadline' ? '#d62728' : '#555'}">${esc(`${text} ${dur(t)}`)}</text></g>`;
  const sameLine =
    trace.deadlineMs !== undefined &&
    trace.giveUpMs !== undefined &&
    Math.abs(x(trace.deadlineMs) - x(trace.giveUpMs)) < 60;
  const lines =
    line('deadline', trace.deadlineMs, 'deadline', sameLine ? -12 : 0) +
    line('give-up', trace.giveUpMs, 'user gives up', 0);
  const more =
    hidden > 0
      ? `<text class="hidden-rows" x="4" y="${plotBottom + 30}">${hidden} more span(s) not drawn (the first ${rows.length} by start)</text>`
      : '';
  return (
    `<svg class="waterfall" data-chart="${esc(id)}" data-trace="${esc(trace.traceId)}" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img" aria-label="${esc(title)}">` +
    `<title>${esc(title)}</title><desc>${esc(waterfallSummary(trace))}</desc>` +
    `<rect class="plot" x="${PLOT_X}" y="${TOP - 4}" width="${PLOT_W}" height="${plotBottom - TOP + 4}" fill="#fafafa" stroke="#ddd"/>` +
    `${grid}${body}${lines}${more}` +
    `<text class="axis-label" x="${PLOT_X + PLOT_W / 2}" y="${height - 6 - (hidden > 0 ? ROW : 0)}" text-anchor="middle">ms since the checkout reached the gateway</text>` +
    '</svg>'
  );
}

/** The waterfall panels of one scenario: one per stack, or "no trace captured". */
export function waterfallPanels(
  scenario: string,
  choices: readonly TraceChoice[] | undefined,
  stacks: readonly string[],
): string {
  const panels = stacks.map((stack) => {
    const choice = choices?.find((c) => c.stack === stack);
    const swatch = `<span class="swatch" style="background:${STACK_COLORS[stack as keyof typeof STACK_COLORS] ?? '#555'}"></span>`;
    const title = `Trace of one checkout: ${stack}`;
    let inner: string;
    try {
      inner =
        choice?.waterfall === undefined
          ? `<p class="no-trace">no trace captured${choice === undefined ? '' : ` (${choice.sampled} whole checkout(s) stitched)`}</p>`
          : waterfallChart(`waterfall-${scenario}-${stack}`, title, choice.waterfall) +
            `<p class="lead">${esc(waterfallSummary(choice.waterfall))} Chosen among ${choice.sampled} traced checkouts (${choice.failed} failed).</p>`;
    } catch {
      inner = '<p class="no-trace">no trace captured (its spans could not be drawn)</p>';
    }
    return `<figure class="waterfall-panel" data-stack="${esc(stack)}"><figcaption>${swatch}${esc(title)}</figcaption>${inner}</figure>`;
  });
  const legend = Object.entries(SERVICE_COLORS)
    .map(([name, color]) => `<span class="swatch" style="background:${color}"></span>${name}`)
    .join(' &nbsp; ');
  return (
    `<div class="waterfalls" data-scenario="${esc(scenario)}"><p class="lead">Where the time went, one checkout per stack: ${esc(REPRESENTATIVE_RULE)}. ` +
    `Rows in the order the spans started: each service's server span (its work for the request), prazo's call (◆ its decisions), each attempt, retry and hedge with its outcome at its right end ` +
    `(<span style="color:${OUTCOME_COLORS.ok}">ok</span>, <span style="color:${OUTCOME_COLORS.error}">error</span>, <span style="color:${OUTCOME_COLORS.timeout}">timeout</span>, <span style="color:${OUTCOME_COLORS.cancelled}">cancelled</span>); ` +
    `a black tick is the deadline a service read. ${legend}</p>${panels.join('')}</div>`
  );
}
