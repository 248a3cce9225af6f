import type { FleetSeries } from '../calibrate/fleet.js';
import type { PrometheusSeries } from '../calibrate/options.js';
import { type Matcher, parseSelector } from '../calibrate/promql.js';
import { unitFromName } from '../calibrate/sources/prometheus.js';
import type { LatencyUnit } from '../calibrate/sources/types.js';
import { ATTR, METRICS, type MetricKey, type MetricSpec } from '../otel/constants.js';

/**
 * How prazo's OpenTelemetry metric names appear in Prometheus. Two translations exist in the wild,
 * and a rule written for one finds nothing under the other, so the scheme is an explicit choice:
 *
 * - `exporter` (default): `@opentelemetry/exporter-prometheus`, the JS SDK's own scrape endpoint.
 *   Invalid characters become `_`, monotonic counters get `_total`, units are *not* appended:
 *   `prazo.dependency.attempt.duration` → `prazo_dependency_attempt_duration_bucket`.
 * - `otlp`: Prometheus' OTLP receiver and the OpenTelemetry Collector's Prometheus exporters with
 *   their default `UnderscoreEscapingWithSuffixes` translation (prometheus/otlptranslator): the unit
 *   is appended as a word (`s` → `_seconds`), `{annotation}` units add nothing, counters end in
 *   `_total`, dimensionless gauges in `_ratio`: → `prazo_dependency_attempt_duration_seconds_bucket`.
 *
 * Attribute names translate the same way in both: `prazo.dependency` → `prazo_dependency`.
 */
export type NamingScheme = 'exporter' | 'otlp';
export const NAMING_SCHEMES: readonly NamingScheme[] = Object.freeze(['exporter', 'otlp']);

/** UCUM units prazo uses, as Prometheus unit words (otlptranslator's table, the part prazo needs). */
const UNIT_WORDS: Readonly<Record<string, string>> = Object.freeze({
  s: 'seconds',
  ms: 'milliseconds',
  '1': '',
});

/**
 * Characters a name from the config cannot carry into a rule file: control characters (Go's YAML
 * reader refuses DEL and C1 raw, and the `yaml` writer leaves them raw even in quotes; a tab or a line
 * break in a name is a typo, not a dependency),
 * U+2028/U+2029 and NEL (line breaks to Go's YAML reader, which would split a plain scalar), the BOM
 * and U+FFFE/U+FFFF (not printable to it), and unpaired surrogates (no UTF-8 spelling at all: YAML's
 * `\ud800` escape and PromQL's are both refused).
 */
export const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029\ufeff\ufffe\uffff]/u;

/** The longest dependency, endpoint or component name the generators take. */
export const MAX_NAME_LENGTH = 200;

/** A name that becomes a label value, a PromQL string and YAML text: printable, 1 to 200 characters. */
export const PRINTABLE_NAME = Object.freeze({
  describe: `printable text of 1 to ${MAX_NAME_LENGTH} characters (no control characters, line breaks, byte-order mark or unpaired surrogates: a rule file cannot carry them)`,
  test: (v: unknown): boolean =>
    typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME_LENGTH && !UNPRINTABLE.test(v),
});

/**
 * Text from the config as it is written into a rule's labels and annotations, which Prometheus expands
 * as Go templates: a `{{` in a name would open an action (`a{{b` fails to load; a dependency named
 * `{{ $value }}` would be labelled with the alert's value). Each `{` of a run of two or more is written
 * as the action `{{ "{" }}`, which prints it, so the expanded text is the name as given; a lone `{`
 * (`GET /items/{id}`) is plain text to the template and stays as it reads.
 */
export function templateText(text: string): string {
  return text.replace(/\{\{+/g, (run) => '{{ "{" }}'.repeat(run.length));
}

/** An attribute name as a Prometheus label name. */
export function labelName(attribute: string): string {
  return attribute.replace(/[^a-zA-Z0-9_]/g, '_').replace(/_{2,}/g, '_');
}

function exporterName(metric: MetricSpec): string {
  const base = metric.name.replace(/[^a-zA-Z0-9_]/g, '_').replace(/_{2,}/g, '_');
  return metric.kind === 'counter' && !base.endsWith('_total') ? `${base}_total` : base;
}

function otlpName(metric: MetricSpec): string {
  let tokens = metric.name.split(/[^a-zA-Z0-9:]+/).filter((t) => t.length > 0);
  const unit = metric.unit.includes('{')
    ? ''
    : (UNIT_WORDS[metric.unit] ?? metric.unit.replace(/[^a-zA-Z0-9:]+/g, '_'));
  if (unit !== '' && !tokens.includes(unit)) tokens.push(unit);
  if (metric.kind === 'counter') tokens = [...tokens.filter((t) => t !== 'total'), 'total'];
  if (metric.unit === '1' && metric.kind === 'gauge')
    tokens = [...tokens.filter((t) => t !== 'ratio'), 'ratio'];
  return tokens.join('_');
}

/** The Prometheus metric family name of one prazo metric (a histogram's series add `_bucket` etc.). */
export function prometheusName(metric: MetricSpec, scheme: NamingScheme): string {
  return scheme === 'otlp' ? otlpName(metric) : exporterName(metric);
}

/** Family names of every prazo metric, by key, under one scheme. */
export function familyNames(scheme: NamingScheme): Readonly<Record<MetricKey, string>> {
  const out = {} as Record<MetricKey, string>;
  for (const key of Object.keys(METRICS) as MetricKey[]) out[key] = prometheusName(METRICS[key], scheme);
  return Object.freeze(out);
}

/** Every series name prazo can export under `scheme`: a histogram contributes `_bucket`, `_count`, `_sum`. */
export function exportedSeriesNames(scheme: NamingScheme): readonly string[] {
  const out: string[] = [];
  for (const metric of Object.values(METRICS)) {
    const name = prometheusName(metric, scheme);
    if (metric.kind === 'histogram') out.push(`${name}_bucket`, `${name}_count`, `${name}_sum`);
    else out.push(name);
  }
  return Object.freeze(out);
}

/**
 * The histogram a dependency's latency is read from in the fleet's Prometheus (SPEC X8, C5): its
 * config's `histogram.prometheus`, each key defaulting to prazo/otel's own attempt-duration histogram
 * under `scheme` — the dependency's series are then matched by `prazo_dependency` (added to a given
 * selector unless it names that label), split by `prazo_outcome`, in seconds. One function for
 * `prazo calibrate --prometheus`, the drift alert and the dashboard, so all three read the same series.
 * Throws `RangeError` for a selector that is not label matchers (the config loader refuses those first).
 */
export function latencySeries(
  dependency: string,
  given: PrometheusSeries | undefined,
  scheme: NamingScheme,
): FleetSeries {
  const own = given?.metric === undefined;
  const metric = own
    ? prometheusName(METRICS.attemptDuration, scheme)
    : given!.metric!.replace(/_bucket$/, '');
  const read = given?.selector === undefined ? { matchers: [] } : parseSelector(given.selector);
  if ('problem' in read) throw new RangeError(`selector of ${dependency}: ${read.problem}`);
  const matchers: Matcher[] = [...read.matchers];
  const byName = labelName(ATTR.dependency);
  if (own && !matchers.some(([label]) => label === byName)) matchers.unshift([byName, '=', dependency]);
  const outcomeLabel = given?.outcomeLabel ?? (own ? labelName(ATTR.outcome) : undefined);
  const unit = given?.unit ?? (own ? (METRICS.attemptDuration.unit as LatencyUnit) : unitFromName(metric));
  if (unit === undefined) throw new RangeError(`cannot tell the unit of ${metric}: give \`unit\``);
  return Object.freeze({ metric, matchers: Object.freeze(matchers), outcomeLabel, unit });
}
