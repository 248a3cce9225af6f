import type { StackName } from '../types.js';

/** Small, shared formatting for the table, the progress line and the HTML report. */

export const STACK_COLORS: Readonly<Record<StackName, string>> = {
  naive: '#d62728',
  cockatiel: '#ff7f0e',
  prazo: '#2ca02c',
};

/** A duration: `840 ms`, `2.3 s`, `4 min`; `—` when unknown. */
export function ms(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  if (value < 1_000) return `${Math.round(value)} ms`;
  if (value < 120_000) return `${(value / 1_000).toFixed(1)} s`;
  return `${Math.round(value / 60_000)} min`;
}

/** A percentage with one decimal (`99.9%`), `100%` exactly, `—` when unknown. */
export function pct(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  return value === 100 ? '100%' : `${value.toFixed(1)}%`;
}

/** A ratio: `1.10×`; `—` when unknown. */
export function times(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '—' : `${value.toFixed(2)}×`;
}

/** Escapes text for HTML and SVG. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Pads (or cuts) to a width, counting code points. */
export function pad(text: string, width: number, right = false): string {
  const length = [...text].length;
  if (length >= width) return text;
  const fill = ' '.repeat(width - length);
  return right ? fill + text : text + fill;
}
