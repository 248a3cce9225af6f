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
}

interface Frame {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
}

const W = 540;
const H = 230;
const M = { left: 52, right: 12, top: 28, bottom: 40 };
const PW = W - M.left - M.right;
const PH = H - M.top - M.bottom;

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

function frame(
  frameInfo: Frame,
  xTicks: string,
  yTicks: string,
  body: string,
  legend: readonly Series[],
): string {
  const keys = legend
    .map((s, i) => {
      const x = M.left + 8 + i * 120;
      const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
      return `<line x1="${x}" y1="14" x2="${x + 18}" y2="14" stroke="${s.color}" stroke-width="3"${dash}/><text x="${x + 22}" y="18">${esc(s.name)}</text>`;
    })
    .join('');
  return (
    `<svg class="chart" data-chart="${esc(frameInfo.id)}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(frameInfo.title)}">` +
    `<rect class="plot" x="${M.left}" y="${M.top}" width="${PW}" height="${PH}" fill="#fafafa" stroke="#ddd"/>` +
    `${yTicks}${xTicks}${body}<g class="legend">${keys}</g>` +
    `<text class="axis-label" x="${M.left + PW / 2}" y="${H - 6}" text-anchor="middle">${esc(frameInfo.xLabel)}</text>` +
    `<text class="axis-label" transform="translate(12 ${M.top + PH / 2}) rotate(-90)" text-anchor="middle">${esc(frameInfo.yLabel)}</text>` +
    '</svg>'
  );
}

function yAxis(ticks: readonly number[], yMax: number, format: (v: number) => string): string {
  return ticks
    .map((t) => {
      const y = M.top + PH - (t / yMax) * PH;
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
  const top = Math.max(1, ...info.series.flatMap((s) => s.values), ...(info.marks ?? []).map((m) => m.y));
  const ticks = niceTicks(top);
  const yMax = ticks[ticks.length - 1]!;
  const x = (i: number): number => M.left + (n === 1 ? 0 : (i / (n - 1)) * PW);
  const y = (v: number): number => M.top + PH - (Math.max(0, v) / yMax) * PH;
  const xTicks = niceTicks((n - 1) * info.xStepS, 6)
    .filter((t) => t <= (n - 1) * info.xStepS + 1e-9)
    .map((t) => {
      const px = M.left + (n === 1 ? 0 : (t / ((n - 1) * info.xStepS)) * PW);
      return `<text x="${f(px)}" y="${M.top + PH + 16}" text-anchor="middle">${t}</text>`;
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
      const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
      return `<path class="series" data-series="${esc(s.name)}" d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`;
    })
    .join('');
  return frame(
    info,
    xTicks,
    yAxis(ticks, yMax, (v) => String(v)),
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
  const y = (v: number): number => M.top + PH - (v / yMax) * PH;
  const xTicks = [5, 10, 20, 50, 100, 200, 500, 1000, 2000]
    .filter((t) => t >= edges[0]! && t <= edges[edges.length - 1]!)
    .map(
      (t) =>
        `<text x="${f(x(t))}" y="${M.top + PH + 16}" text-anchor="middle">${t >= 1000 ? `${t / 1000}s` : t}</text>`,
    )
    .join('');
  const mark =
    info.markMs === undefined
      ? ''
      : `<line class="mark" x1="${f(x(info.markMs))}" y1="${M.top}" x2="${f(x(info.markMs))}" y2="${M.top + PH}" stroke="#555" stroke-dasharray="2 3"/><text x="${f(x(info.markMs) - 4)}" y="${M.top + 12}" text-anchor="end" fill="#555">user gives up</text>`;
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
    yAxis(ticks, yMax, (v) => `${v}%`),
    mark + paths,
    info.series,
  );
}
