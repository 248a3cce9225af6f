import { esc } from './format.js';

/**
 * Two small chart kinds for the HTML report, drawn as inline SVG by this code (no library, no CDN:
 * the report is one self-contained file that opens anywhere, offline). Every chart is an
 * `<svg class="chart">`, every series a `<path class="series" data-series="…">`.
 */

export interface Series {
  readonly name: string;
  readonly color: string;
  readonly values: readonly number[];
  readonly dashed?: boolean;
  /** A dash pattern of its own (`2 3`), for series told apart by their stroke rather than colour. */
  readonly dash?: string;
  /** Written as `data-<key>` attributes of the series' path (what a reader or a test can look up). */
  readonly data?: Readonly<Record<string, string>>;
}

interface Frame {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** What the chart shows, in words (the SVG's `<desc>`, read by screen readers). */
  readonly description?: string;
}

const W = 540;
const H = 230;
const M = { left: 52, right: 12, top: 28, bottom: 40 };
const PW = W - M.left - M.right;
const PH = H - M.top - M.bottom;
/** Legend keys: one row 120 px apart while they fit, else rows of three, each row 16 px more on top. */
const KEY_WIDTH = 120;
const KEYS_PER_ROW = 3;
const WIDE_KEY = 158;
const ROW = 16;

/** Where the plot starts and how tall the chart is, for a legend of `keys` entries. */
function layout(keys: number): { readonly top: number; readonly height: number; readonly rows: number } {
  const rows = keys * KEY_WIDTH <= PW + M.right ? 1 : Math.ceil(keys / KEYS_PER_ROW);
  return { top: M.top + (rows - 1) * ROW, height: H + (rows - 1) * ROW, rows };
}

/** Round tick values covering [0, max]. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const base = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * base).find((s) => s >= raw) ?? 10 * base;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push(Math.round(v * 1e6) / 1e6);
  if (ticks[ticks.length - 1]! < max) ticks.push(ticks[ticks.length - 1]! + step);
  return ticks;
}

const f = (n: number): string => (Math.round(n * 10) / 10).toString();

const dashOf = (s: Series): string =>
  s.dash !== undefined ? ` stroke-dasharray="${esc(s.dash)}"` : s.dashed ? ' stroke-dasharray="5 3"' : '';

function frame(
  frameInfo: Frame,
  xTicks: string,
  yTicks: string,
  body: string,
  legend: readonly Series[],
): string {
  const { top, height, rows } = layout(legend.length);
  const keys = legend
    .map((s, i) => {
      const row = rows === 1 ? 0 : Math.floor(i / KEYS_PER_ROW);
      const column = rows === 1 ? i : i % KEYS_PER_ROW;
      const x = M.left + 8 + column * (rows === 1 ? KEY_WIDTH : WIDE_KEY);
      const y = 14 + row * ROW;
      return `<line x1="${x}" y1="${y}" x2="${x + 18}" y2="${y}" stroke="${s.color}" stroke-width="3"${dashOf(s)}/><text x="${x + 22}" y="${y + 4}">${esc(s.name)}</text>`;
    })
    .join('');
  const desc = frameInfo.description === undefined ? '' : `<desc>${esc(frameInfo.description)}</desc>`;
  return (
    `<svg class="chart" data-chart="${esc(frameInfo.id)}" viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" role="img" aria-label="${esc(frameInfo.title)}">` +
    `<title>${esc(frameInfo.title)}</title>${desc}` +
    `<rect class="plot" x="${M.left}" y="${top}" width="${PW}" height="${PH}" fill="#fafafa" stroke="#ddd"/>` +
    `${yTicks}${xTicks}${body}<g class="legend">${keys}</g>` +
    `<text class="axis-label" x="${M.left + PW / 2}" y="${height - 6}" text-anchor="middle">${esc(frameInfo.xLabel)}</text>` +
    `<text class="axis-label" transform="translate(12 ${top + PH / 2}) rotate(-90)" text-anchor="middle">${esc(frameInfo.yLabel)}</text>` +
    '</svg>'
  );
}

function yAxis(ticks: readonly number[], yMax: number, format: (v: number) => string, top: number): string {
  return ticks
    .map((t) => {
      const y = top + PH - (t / yMax) * PH;
      return `<line x1="${M.left}" y1="${f(y)}" x2="${M.left + PW}" y2="${f(y)}" stroke="#eee"/><text x="${M.left - 6}" y="${f(y + 4)}" text-anchor="end">${format(t)}</text>`;
    })
    .join('');
}

/** Values over time (x in seconds), one line per series; optional horizontal reference lines. */
export function lineChart(
  info: Frame & {
    readonly xStepS: number;
    readonly series: readonly Series[];
    readonly marks?: readonly { readonly y: number; readonly label: string }[];
  },
): string {
  const n = Math.max(1, ...info.series.map((s) => s.values.length));
  const highest = Math.max(
    1,
    ...info.series.flatMap((s) => s.values.filter(Number.isFinite)),
    ...(info.marks ?? []).map((m) => m.y),
  );
  const ticks = niceTicks(highest);
  const yMax = ticks[ticks.length - 1]!;
  const { top } = layout(info.series.length);
  const x = (i: number): number => M.left + (n === 1 ? 0 : (i / (n - 1)) * PW);
  const y = (v: number): number => top + PH - (Math.max(0, Number.isFinite(v) ? v : 0) / yMax) * PH;
  const xTicks = niceTicks((n - 1) * info.xStepS, 6)
    .filter((t) => t <= (n - 1) * info.xStepS + 1e-9)
    .map((t) => {
      const px = M.left + (n === 1 ? 0 : (t / ((n - 1) * info.xStepS)) * PW);
      return `<text x="${f(px)}" y="${top + PH + 16}" text-anchor="middle">${t}</text>`;
    })
    .join('');
  const marks = (info.marks ?? [])
    .map(
      (m) =>
        `<line class="mark" x1="${M.left}" y1="${f(y(m.y))}" x2="${M.left + PW}" y2="${f(y(m.y))}" stroke="#555" stroke-dasharray="2 3"/><text x="${M.left + PW - 4}" y="${f(y(m.y) - 4)}" text-anchor="end" fill="#555">${esc(m.label)}</text>`,
    )
    .join('');
  const paths = info.series
    .map((s) => {
      const d = s.values.map((v, i) => `${i === 0 ? 'M' : 'L'}${f(x(i))},${f(y(v))}`).join('');
      const data = Object.entries(s.data ?? {})
        .map(([k, v]) => ` data-${k.replace(/[^a-z0-9-]/g, '')}="${esc(v)}"`)
        .join('');
      return `<path class="series" data-series="${esc(s.name)}"${data} d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dashOf(s)}/>`;
    })
    .join('');
  return frame(
    info,
    xTicks,
    yAxis(ticks, yMax, (v) => String(v), top),
    marks + paths,
    info.series,
  );
}

/** Histograms on a log-scale latency axis (bin edges in ms), one step line per series, in %. */
export function histogramChart(
  info: Frame & {
    readonly edges: readonly number[];
    readonly series: readonly Series[];
    readonly markMs?: number;
  },
): string {
  const edges = info.edges;
  const lo = Math.log(edges[0]!);
  const span = Math.log(edges[edges.length - 1]!) - lo;
  const x = (v: number): number => M.left + ((Math.log(v) - lo) / span) * PW;
  const shares = info.series.map((s) => {
    const total = s.values.reduce((a, b) => a + b, 0);
    return s.values.map((c) => (total > 0 ? (100 * c) / total : 0));
  });
  const ticks = niceTicks(Math.max(1, ...shares.flat()));
  const yMax = ticks[ticks.length - 1]!;
  const { top } = layout(info.series.length);
  const y = (v: number): number => top + PH - (v / yMax) * PH;
  const xTicks = [5, 10, 20, 50, 100, 200, 500, 1000, 2000]
    .filter((t) => t >= edges[0]! && t <= edges[edges.length - 1]!)
    .map(
      (t) =>
        `<text x="${f(x(t))}" y="${top + PH + 16}" text-anchor="middle">${t >= 1000 ? `${t / 1000}s` : t}</text>`,
    )
    .join('');
  const mark =
    info.markMs === undefined
      ? ''
      : `<line class="mark" x1="${f(x(info.markMs))}" y1="${top}" x2="${f(x(info.markMs))}" y2="${top + PH}" stroke="#555" stroke-dasharray="2 3"/><text x="${f(x(info.markMs) - 4)}" y="${top + 12}" text-anchor="end" fill="#555">user gives up</text>`;
  const paths = info.series
    .map((s, k) => {
      let d = `M${f(x(edges[0]!))},${f(y(0))}`;
      shares[k]!.forEach((v, i) => {
        d += `L${f(x(edges[i]!))},${f(y(v))}L${f(x(edges[i + 1]!))},${f(y(v))}`;
      });
      d += `L${f(x(edges[edges.length - 1]!))},${f(y(0))}`;
      return `<path class="series" data-series="${esc(s.name)}" d="${d}" fill="${s.color}" fill-opacity="0.12" stroke="${s.color}" stroke-width="2"/>`;
    })
    .join('');
  return frame(
    info,
    xTicks,
    yAxis(ticks, yMax, (v) => `${v}%`, top),
    mark + paths,
    info.series,
  );
}
