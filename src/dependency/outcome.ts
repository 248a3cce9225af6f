import { isPrazoError, thrownText } from '../errors/base.js';
import { isTimeoutError } from '../errors/guards.js';
import type { Outcome } from '../latency/types.js';
import type { ClassifyOptions, FailureVerdict } from '../retry/classify.js';
import type { DependencyCore, ErrorClassifier } from './core.js';
import type { ExecuteOptions } from './options.js';
import type { AttemptKind, DependencyEvent, ResultVerdict } from './types.js';

/** How the latency recorder and the events see an attempt's end. */
export type EndOutcome = Outcome | 'cancelled';

/**
 * The caller's verdict on a result that did not throw. A `classify` that throws, or returns anything
 * but a verdict object, is a bug in the caller's code: the result is then returned as is (never
 * retried), with a warning. A verdict's fields are read once and kept only as documented: `retryable`
 * and `pushback` when `true`, `outcome` when `'success'` or `'error'`, `retryAfterMs` when a number
 * ≥ 0 (a NaN, a negative or a string wait is ignored: the backoff applies) — so no event, timer or
 * wait is ever computed from a value of another type.
 */
export function resultVerdict<T>(
  classify: ExecuteOptions<T>['classify'],
  value: T,
): ResultVerdict | undefined {
  if (classify === undefined) return undefined;
  let why: unknown;
  try {
    const verdict = classify(value) as unknown;
    if (verdict !== null && typeof verdict === 'object') return checkedVerdict(verdict as ResultVerdict);
    why = `returned ${verdict === null ? 'null' : typeof verdict}, not a verdict`;
  } catch (error) {
    why = `threw: ${thrownText(error)}`;
  }
  process.emitWarning(`prazo: classify() ${String(why)}; result returned as is`, 'PrazoWarning');
  return undefined;
}

/** `verdict` as the executor reads it: itself when every field is as documented, else a clean copy. */
function checkedVerdict(verdict: ResultVerdict): ResultVerdict {
  const { retryable, outcome, retryAfterMs, pushback } = verdict;
  if (
    typeof retryable === 'boolean' &&
    (outcome === undefined || outcome === 'success' || outcome === 'error') &&
    (retryAfterMs === undefined || (typeof retryAfterMs === 'number' && retryAfterMs >= 0)) &&
    (pushback === undefined || typeof pushback === 'boolean')
  )
    return verdict;
  return {
    retryable: retryable === true,
    ...(outcome === 'success' || outcome === 'error' ? { outcome } : {}),
    ...(typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? { retryAfterMs } : {}),
    ...(pushback === true ? { pushback } : {}),
  };
}

const NOT_RETRYABLE: FailureVerdict = Object.freeze({ retryable: false, immediate: false, kind: 'unknown' });

/**
 * The verdict on a thrown error. A `classifyError` that throws (or returns no verdict) is a bug in
 * the caller's code: the failure is then not retried, with a warning, and the call still settles.
 */
export function failureVerdict(
  classifyError: ErrorClassifier,
  error: unknown,
  options: ClassifyOptions,
  dependency: string,
): FailureVerdict {
  try {
    const verdict = classifyError(error, options);
    if (verdict !== null && typeof verdict === 'object') return verdict;
    process.emitWarning(
      `prazo: classifyError() returned no verdict for ${dependency}, failure not retried`,
      'PrazoWarning',
    );
  } catch (thrown) {
    process.emitWarning(
      `prazo: classifyError() threw for ${dependency}, failure not retried: ${String(thrown)}`,
      'PrazoWarning',
    );
  }
  return NOT_RETRYABLE;
}

/** Releases a result that will not be returned; a `discard` that throws becomes a warning. */
export function discardSafely<T>(
  discard: ((value: T) => void) | undefined,
  value: T,
  dependency: string,
): void {
  if (discard === undefined) return;
  try {
    discard(value);
  } catch (error) {
    process.emitWarning(`prazo: discard() threw for ${dependency}: ${thrownText(error)}`, 'PrazoWarning');
  }
}

/**
 * The codes of a call refused or cut by the caller's own client being closed or destroyed: undici's
 * (`request()` on a closed or destroyed dispatcher, a request cut by `destroy()`) and prazo's
 * `CLIENT_CLOSED`. Such an end is the caller's lifecycle, never the dependency's answer.
 */
const CLIENT_ENDED_CODES: ReadonlySet<unknown> = new Set([
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'CLIENT_CLOSED',
]);

/**
 * True when an attempt failed because the caller's own client was closed or destroyed: like a
 * request that waited for a connection and was never written (QUEUE_TIMEOUT), it says nothing about
 * the dependency, so it is not recorded (latency, error rate, live calibration's health check), not
 * sampled by the limit, not counted by the throttle, and its `attempt-end` says `cancelled`. Counted
 * as errors, a shutdown would read as an outage (300 calls on a closed client: 86 % errors in a
 * shared executor's window, its error-rate SLO and live calibration's health check with it).
 */
export function endedByClient(value: unknown): boolean {
  return (
    value !== null && typeof value === 'object' && CLIENT_ENDED_CODES.has((value as { code?: unknown }).code)
  );
}

/** Success, error or timeout (any phase's, or the deadline's), for the recorder (SPEC C4, C5). */
export function outcomeOf(
  ok: boolean,
  verdict: ResultVerdict | undefined,
  value: unknown,
  timedOut: boolean,
): Outcome {
  if (ok)
    return verdict === undefined ? 'success' : (verdict.outcome ?? (verdict.retryable ? 'error' : 'success'));
  return timedOut || isTimeoutError(value) ? 'timeout' : 'error';
}

type AttemptEnd = Extract<DependencyEvent, { type: 'attempt-end' }>;

/** The `attempt-end` event; built only when someone listens. */
export function endEvent(
  dependency: string,
  attempt: { readonly kind: AttemptKind; readonly attempt: number; readonly instance?: string | undefined },
  latencyMs: number,
  ok: boolean,
  outcome: EndOutcome,
  value: unknown,
): AttemptEnd {
  const instance = attempt.instance;
  const base = {
    type: 'attempt-end',
    dependency,
    kind: attempt.kind,
    attempt: attempt.attempt,
    ...(instance === undefined ? {} : { instance }),
    latencyMs,
    outcome,
  } as const;
  if (ok || outcome === 'cancelled') return base;
  const phase = isPrazoError(value) && 'phase' in value ? (value.phase as AttemptEnd['phase']) : undefined;
  return phase === undefined ? { ...base, error: value } : { ...base, phase, error: value };
}

/** The verdict on one failed attempt: a failed result (retryable by `classify`) or a thrown error. */
export function failureOf(
  core: DependencyCore,
  retryResponseTimeout: boolean,
  ok: boolean,
  verdict: ResultVerdict | undefined,
  value: unknown,
): FailureVerdict {
  if (ok) return { retryable: true, immediate: false, kind: 'status', retryAfterMs: verdict?.retryAfterMs };
  const classifyOptions = {
    retryResponseTimeout,
    nowEpochMs: core.clock.epochNow(),
    pushback: core.pushback,
  };
  return failureVerdict(core.classifyError, value, classifyOptions, core.name);
}
