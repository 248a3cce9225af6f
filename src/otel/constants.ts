/**
 * Every metric prazo exports, its unit, its attributes and their values: the one place where these
 * names are spelled (SPEC R7, V1, V3, B3, C5, D6, H3, X3). The instruments (`instruments.ts`), the
 * alert rules and the dashboard (`src/rules/`) all read them from here, so a rename cannot leave a rule
 * pointing at a series that no longer exists (the end-to-end test also checks it against a real scrape).
 *
 * This file imports nothing, on purpose: `src/rules/` reads it without pulling in `@opentelemetry/api`.
 *
 * Conventions (OpenTelemetry semantic conventions, "metrics" and "naming"):
 * - names are `prazo.<entity>.<thing>`, lower case, dots between namespaces, `_` inside a word group;
 *   no unit and no `_total` in the name (exporters add what their format wants);
 * - the unit lives in the instrument (UCUM): `s` for durations, `1` for ratios, `{attempt}`-style
 *   annotations for counts;
 * - attribute names are `prazo.*`, values are small closed sets (bounded cardinality).
 *
 * Durations are in **seconds** (`s`), not ms, although prazo computes in ms: the semantic conventions
 * say durations SHOULD be seconds (`http.client.request.duration` is in `s`), Prometheus' base unit is
 * the second, and dashboards (Grafana's `s` unit) scale seconds down to ms on their own. Mixing units
 * with the rest of a user's telemetry would make every cross-service panel wrong by 1000×. The
 * conversion is one division at record time.
 */

/** Attribute (label) names. In Prometheus the dots become underscores: `prazo_dependency`. */
export const ATTR = Object.freeze({
  /** The dependency's name, as given to `createDependency({ name })`. */
  dependency: 'prazo.dependency',
  /** Why an attempt exists: `original`, `retry` or `hedge`. */
  attemptKind: 'prazo.attempt.kind',
  /** Where the time ran out: `queue`, `connect`, `response`, `body`, `deadline`, `unknown`. */
  timeoutPhase: 'prazo.timeout.phase',
  /** How an attempt ended: `success`, `error`, `timeout` or `cancelled`. */
  outcome: 'prazo.outcome',
  /** The server's name, as given to `instrumentPrazo({ servers })`. */
  server: 'prazo.server',
  /** An endpoint with a latency budget (SPEC B1). */
  endpoint: 'prazo.endpoint',
  /** One component (slice) of an endpoint's latency budget. */
  component: 'prazo.component',
  /**
   * The content hash of the config version a dependency's settings come from (16 hex digits of the
   * file's SHA-256): one value per version, and only the version in force is reported.
   */
  configHash: 'prazo.config.hash',
  /**
   * One instance of a dependency that is several (SPEC X5): its origin (`http://10.0.0.1:8080`). One
   * value per instance the client knows: as many as its origins, or as DNS discovery finds.
   */
  instance: 'prazo.instance',
  /** Why an instance was ejected: `failures` (consecutive) or `latency` (its window p99). */
  ejectionReason: 'prazo.ejection.reason',
  /**
   * Where an instance stands now: `active` (in rotation), `probation` (back in rotation after an
   * ejection, one failure from the next) or `ejected` (out of rotation).
   */
  instanceState: 'prazo.instance.state',
});

export const ATTEMPT_KINDS = Object.freeze(['original', 'retry', 'hedge'] as const);
/** Kinds of extra attempt a retry budget can refuse (SPEC R1, H3). */
export const EXTRA_KINDS = Object.freeze(['retry', 'hedge'] as const);
/** `unknown` only when an integration reports a timeout without saying where (it should not). */
export const TIMEOUT_PHASES = Object.freeze([
  'queue',
  'connect',
  'response',
  'body',
  'deadline',
  'unknown',
] as const);
/** Phases whose limit is the dependency's own calibrated timeout (what abandonment measures, SPEC C5). */
export const CALIBRATED_PHASES = Object.freeze(['response', 'body'] as const);
export const OUTCOMES = Object.freeze(['success', 'error', 'timeout', 'cancelled'] as const);
export const EJECTION_REASONS = Object.freeze(['failures', 'latency'] as const);
export const INSTANCE_STATES = Object.freeze(['active', 'probation', 'ejected'] as const);

export type InstrumentKind = 'counter' | 'histogram' | 'gauge';

/** One exported metric: what the instrument is created with. */
export interface MetricSpec {
  readonly name: string;
  readonly kind: InstrumentKind;
  readonly unit: string;
  readonly description: string;
  /** Attribute names every data point carries. */
  readonly attributes: readonly string[];
}

const spec = (
  name: string,
  kind: InstrumentKind,
  unit: string,
  attributes: readonly string[],
  description: string,
): MetricSpec => Object.freeze({ name, kind, unit, description, attributes: Object.freeze(attributes) });

const D = ATTR.dependency;

/** Every metric prazo exports. Keys are how code refers to them. */
export const METRICS = Object.freeze({
  attempts: spec(
    'prazo.dependency.attempts',
    'counter',
    '{attempt}',
    [D, ATTR.attemptKind],
    'Attempts started against a dependency, by kind: original, retry, hedge (SPEC R7, H3)',
  ),
  budgetRefusals: spec(
    'prazo.dependency.budget.refusals',
    'counter',
    '{attempt}',
    [D, ATTR.attemptKind],
    'Extra attempts (retries, hedges) the retry budget refused (SPEC R1, H3)',
  ),
  retryRatio: spec(
    'prazo.dependency.retry.ratio',
    'gauge',
    '1',
    [D],
    'Extra attempts / original requests over the retry budget window (SPEC R7, V3)',
  ),
  timeouts: spec(
    'prazo.dependency.timeouts',
    'counter',
    '{timeout}',
    [D, ATTR.timeoutPhase],
    'Attempts cut by a timeout, by phase: queue, connect, response, body, deadline (SPEC D6)',
  ),
  deadlineInsufficient: spec(
    'prazo.dependency.deadline_insufficient',
    'counter',
    '{request}',
    [D],
    'Calls failed fast because the remaining deadline could not fit the p99 (SPEC D4)',
  ),
  attemptDuration: spec(
    'prazo.dependency.attempt.duration',
    'histogram',
    's',
    [D, ATTR.outcome],
    'Duration of each attempt, by outcome (SPEC C1)',
  ),
  timeoutConfigured: spec(
    'prazo.dependency.timeout.configured',
    'gauge',
    's',
    [D, ATTR.timeoutPhase],
    'Per-attempt timeout in force, by phase (connect, response), to compare with the live p99 (SPEC C5, V1)',
  ),
  latencyP99: spec(
    'prazo.dependency.latency.p99',
    'gauge',
    's',
    [D],
    'Live p99 of successful attempts over the last full latency window (SPEC C5, V1)',
  ),
  throttled: spec(
    'prazo.dependency.throttled',
    'counter',
    '{request}',
    [D],
    'Calls the adaptive throttle refused locally: nothing sent, failed at once with THROTTLED (docs/throttling.md, SPEC V2)',
  ),
  throttleProbability: spec(
    'prazo.dependency.throttle.probability',
    'gauge',
    '1',
    [D],
    'Probability a new call is refused by the adaptive throttle now, from its window of attempts and accepts (docs/throttling.md)',
  ),
  hedgesWon: spec(
    'prazo.dependency.hedges.won',
    'counter',
    '{hedge}',
    [D],
    'Hedged copies that answered first (SPEC H1, H3)',
  ),
  configGeneration: spec(
    'prazo.dependency.config.generation',
    'gauge',
    '{generation}',
    [D, ATTR.configHash],
    'Generation of the config version in force on a dependency (1 at start, +1 per version applied), by content hash (SPEC X9, C7)',
  ),
  instanceAttempts: spec(
    'prazo.instance.attempts',
    'counter',
    '{attempt}',
    [D, ATTR.instance],
    'Attempts sent to each instance of a dependency that is several: the load per instance (SPEC X5)',
  ),
  instanceEjections: spec(
    'prazo.instance.ejections',
    'counter',
    '{ejection}',
    [D, ATTR.instance, ATTR.ejectionReason],
    'Instances taken out of rotation, by reason: consecutive failures or latency (SPEC X5)',
  ),
  instanceReturns: spec(
    'prazo.instance.returns',
    'counter',
    '{return}',
    [D, ATTR.instance],
    'Ejected instances back in rotation, on probation (SPEC X5): ejections − returns is how many are out',
  ),
  instances: spec(
    'prazo.dependency.instances',
    'gauge',
    '{instance}',
    [D, ATTR.instanceState],
    'Instances of a dependency that is several, by state now: active and probation are in rotation, ejected are out (SPEC X5)',
  ),
  wastedWork: spec(
    'prazo.server.wasted_work',
    'counter',
    '{request}',
    [ATTR.server],
    'Requests whose handler finished after their deadline: work nobody waited for (SPEC D7, X1)',
  ),
  wastedWorkTime: spec(
    'prazo.server.wasted_work.time',
    'counter',
    's',
    [ATTR.server],
    'Handler time spent on requests that finished after their deadline (capacity burned for nobody)',
  ),
  rejectedExpired: spec(
    'prazo.server.rejected_expired',
    'counter',
    '{request}',
    [ATTR.server],
    'Requests answered at once because their deadline had already passed (SPEC D2, D5)',
  ),
  sliceObservations: spec(
    'prazo.endpoint.slice.observations',
    'counter',
    '{observation}',
    [ATTR.endpoint, ATTR.component],
    'Timed runs of an endpoint component against its latency budget slice (SPEC B3)',
  ),
  sliceOverruns: spec(
    'prazo.endpoint.slice.overruns',
    'counter',
    '{overrun}',
    [ATTR.endpoint, ATTR.component],
    'Runs of an endpoint component that took longer than its slice of the latency budget (SPEC B3)',
  ),
});

export type MetricKey = keyof typeof METRICS;

/** Default meter (instrumentation scope) name: appears as `otel_scope_name="prazo"` in Prometheus. */
export const METER_NAME = 'prazo';

/**
 * Bucket boundaries of the attempt-duration histogram, in seconds: the semantic conventions' advice
 * for `http.client.request.duration` (5 ms .. 10 s), so prazo's histograms line up with the user's
 * own HTTP histograms bucket for bucket. An SDK View may override them.
 */
export const DURATION_BUCKETS_S = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
]);

/** ms → s, the unit every duration instrument uses. */
export const MS_PER_S = 1000;

/** Limits of the instrumentation itself. */
export const OTEL_LIMITS = Object.freeze({
  /**
   * Distinct dependency names whose attribute sets are cached per event source. A source that reports
   * more (it should report one) still works, with one small allocation per event past the limit.
   */
  attributeCacheSize: 256,
});

/** The name of prazo's tracer (`trace.getTracer(TRACER_NAME)`), as the meter's. */
export const TRACER_NAME = 'prazo';

/** Span names: `<prefix> <dependency>` (issue #26; docs/observability.md "Traces"). */
export const SPAN_NAMES = Object.freeze({
  /** One logical call of a dependency (INTERNAL): prazo's plan, from the deadline check to the answer. */
  call: 'prazo.call',
  /** One attempt of it (CLIENT): the original, a retry or the hedge. */
  attempt: 'prazo.attempt',
});

/**
 * Span attributes: the HTTP semantic conventions' where they apply (`http.request.resend_count`,
 * `error.type`, `server.*`, `url.full`, set by prazo/http), prazo's own otherwise. Times in ms, as
 * prazo plans them (a span attribute is read by a person, next to the span's own duration).
 */
export const SPAN_ATTR = Object.freeze({
  dependency: ATTR.dependency,
  /** The deadline's time left when the call (or the attempt) started, in ms; absent when endless. */
  timeLeft: 'prazo.deadline.time_left_ms',
  /** The attempt's number: 1 for the original, 2.. for retries and the hedge in start order. */
  attempt: 'prazo.attempt',
  attemptKind: ATTR.attemptKind,
  /** The attempt's limit, in ms: min(calibrated timeout, time left) (SPEC R6). */
  attemptTimeout: 'prazo.attempt.timeout_ms',
  /** How the attempt ended: `success`, `error`, `timeout` or `cancelled` (a lost hedge, a caller gone). */
  outcome: 'prazo.attempt.outcome',
  /** The instance (origin) an attempt went to, when the dependency is several (SPEC X5). */
  instance: ATTR.instance,
  /** On the call span: how many attempts were started. */
  attempts: 'prazo.attempts',
  /** HTTP semantic conventions: the attempt's resend number (absent on the original). */
  resendCount: 'http.request.resend_count',
  /** Semantic conventions: prazo's error code, the HTTP status, or the error's name. */
  errorType: 'error.type',
  /** On the server span: the header the incoming deadline came from. */
  serverSource: 'prazo.deadline.source',
  /** On the server span: whether the local maximum cut the incoming deadline (SPEC D2). */
  serverCapped: 'prazo.deadline.capped',
});

/** Span events on the call span, one per executor decision (issue #26). */
export const SPAN_EVENTS = Object.freeze({
  'budget-refused': 'prazo.budget_refused',
  'deadline-insufficient': 'prazo.deadline_insufficient',
  pushback: 'prazo.pushback',
  'retry-after': 'prazo.retry_after',
  throttled: 'prazo.throttled',
  'hedge-skipped': 'prazo.hedge_skipped',
  limited: 'prazo.limited',
} as const);
