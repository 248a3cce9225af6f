/**
 * Small statistics for the benchmark: exact percentiles of sorted samples, and median / min–max over
 * runs. Ratios are what the suite reports (the machine is shared and noisy; absolute numbers drift).
 */

/** The q-quantile (0..1) of an ascending array, nearest-rank; `undefined` when empty. */
export function percentile(sorted, q) {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** Sorts a copy of numbers ascending (Float64Array sorts numerically by default). */
export function sortedCopy(values) {
  return Float64Array.from(values).sort();
}

/** Median and min–max of a list of numbers (undefined entries ignored). */
export function summarize(values) {
  const present = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
  if (present.length === 0) return { median: null, min: null, max: null, n: 0 };
  const s = sortedCopy(present);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
  return { median, min: s[0], max: s[s.length - 1], n: s.length };
}

/** `a / b`, or null when either is missing or b is 0. */
export function ratio(a, b) {
  if (typeof a !== 'number' || typeof b !== 'number' || !Number.isFinite(a) || !(b !== 0)) return null;
  return a / b;
}

/** Round to `digits` significant-looking decimals for JSON (keeps files readable). */
export function round(value, digits = 3) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return value ?? null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Rotates `items` left by `k` positions: round k starts with a different variant. */
export function rotate(items, k) {
  if (items.length === 0) return [];
  const s = ((k % items.length) + items.length) % items.length;
  return [...items.slice(s), ...items.slice(0, s)];
}

/**
 * A row of the goals table: the figure must be at least `atLeast` (a ratio of throughput) or at most
 * `atMost` (a cost). `shortBy` is how far a miss is from the target (0 when met); a figure that could
 * not be measured (`achieved` null, e.g. a variant "not available" in this build) is neither met nor
 * short by anything, and says why in `unavailable`.
 */
export function goal({ what, atLeast, atMost, achieved, unavailable, note }) {
  const max = atMost !== undefined;
  const target = max ? atMost : atLeast;
  const measured = typeof achieved === 'number' && Number.isFinite(achieved) && !unavailable;
  const met = measured && (max ? achieved <= target : achieved >= target);
  const row = {
    what,
    goal: max ? `≤ ${target}` : target,
    achieved: measured ? achieved : null,
    met,
    shortBy: measured ? (met ? 0 : round(Math.abs(achieved - target))) : null,
  };
  if (!measured) row.unavailable = unavailable ?? 'not measured in this run';
  if (note !== undefined) row.note = measured ? note : `not available: ${row.unavailable}`;
  return row;
}
