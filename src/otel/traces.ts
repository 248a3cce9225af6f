import {
  type Attributes,
  type Context,
  context,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type {
  AttemptTrace,
  CallTrace,
  CallTracer,
  TraceAttributes,
  TraceEventName,
  TraceOutcome,
} from '../dependency/trace.js';
import type { AttemptKind } from '../dependency/types.js';
import { isPrazoError } from '../errors/base.js';
import { SPAN_ATTR, SPAN_EVENTS, SPAN_NAMES } from './constants.js';

/**
 * prazo's traces through the OpenTelemetry API (issue #26): the executor's tracing seam
 * (src/dependency/trace.ts) implemented with `@opentelemetry/api` only.
 *
 * One **call span** per logical call of a dependency (`prazo.call <name>`, INTERNAL: it is prazo's
 * plan, not a request on the wire), child of whatever span is active where the call was made; one
 * **attempt span** per attempt (`prazo.attempt <name>`, CLIENT: the original, each retry, the hedge),
 * child of the call span. The attempt's operation — prazo/http's dispatch — is started *inside* the
 * attempt span's context: an HTTP client instrumentation (`@opentelemetry/instrumentation-undici`,
 * `-http`) then records its own client span as the attempt's child and propagates `traceparent` from
 * it, so there is one span per thing (prazo's decision, the wire request), never two of the same.
 * Without such an instrumentation, the attempt span is the client span of the trace.
 *
 * The executor's decisions become events on the call span (budget refused, deadline insufficient,
 * pushback, Retry-After, throttled, hedge skipped, limited).
 *
 * The tracer is the application's (an SDK, a vendor's wrapper, a test double): everything asked of
 * it here is guarded, because the executor calls this seam on its own path: a `startSpan` that threw
 * failed the call with the tracer's error, and a `span.end()` that threw left the call unanswered for
 * ever (its end is handed over right after). A tracer that throws costs the trace, never the call:
 * a call whose span cannot start is not traced, an attempt whose span cannot start still runs (once),
 * and an end whose span throws still ends.
 */

/** The API's no-op provider: what a ProxyTracerProvider with no SDK behind it delegates to. */
const NOOP_PROVIDER: TracerProvider = new ProxyTracerProvider().getDelegate();

/**
 * The provider spans are made by, or undefined when it is the API's no-op (no SDK registered): then
 * nothing is installed on the executor at all and tracing costs nothing. Like the metrics, read when
 * `instrumentPrazo` is called: register the SDK first.
 */
export function activeTracerProvider(given: TracerProvider | undefined): TracerProvider | undefined {
  const provider = given ?? trace.getTracerProvider();
  const delegate = provider instanceof ProxyTracerProvider ? provider.getDelegate() : provider;
  return delegate === NOOP_PROVIDER ? undefined : provider;
}

/** `error.type` (HTTP semantic conventions): prazo's code, the status, or the error's name. */
function errorType(ok: boolean, value: unknown, attributes: TraceAttributes | undefined): string {
  if (ok) {
    const status = attributes?.['http.response.status_code'];
    return status === undefined ? '_OTHER' : String(status);
  }
  if (isPrazoError(value)) return value.code;
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return typeof code === 'string' && code.length > 0 ? code : value.name;
  }
  return '_OTHER';
}

/**
 * The deadline's time left as a span attribute: whole ms, or none for an endless deadline (an
 * `Infinity` attribute is `null` in OTLP/JSON and a string in Zipkin: not a number any backend reads).
 */
export function setTimeLeft(attributes: Attributes, remainingMs: number): void {
  if (Number.isFinite(remainingMs)) attributes[SPAN_ATTR.timeLeft] = Math.round(remainingMs);
}

const KIND_ATTRS: Record<AttemptKind, string> = { original: 'original', retry: 'retry', hedge: 'hedge' };

/**
 * Runs `fn` once inside `within`: if the context manager throws before running it, outside. An error
 * of `fn` itself is its caller's, rethrown as it is.
 */
function runWithin(within: Context, fn: () => void): void {
  let ran = false;
  try {
    context.with(within, () => {
      ran = true;
      fn();
    });
  } catch (error) {
    if (ran) throw error;
    fn();
  }
}

/** Ends `span` whatever its other methods do: `describe` sets its last attributes, guarded apart. */
function endSpan(span: Span, describe: (span: Span) => void): void {
  try {
    describe(span);
  } catch {
    // A span that refuses attributes is still ended below.
  }
  try {
    span.end();
  } catch {
    // The tracer's own failure: the call goes on.
  }
}

class OtelAttemptTrace implements AttemptTrace {
  readonly #span: Span | undefined;
  readonly #context: Context;

  constructor(span: Span | undefined, within: Context) {
    this.#span = span;
    this.#context = within;
  }

  resume(fn: () => void): void {
    runWithin(this.#context, fn);
  }

  end(outcome: TraceOutcome, ok: boolean, value: unknown, attributes: TraceAttributes | undefined): void {
    const span = this.#span;
    if (span === undefined) return;
    endSpan(span, (s) => {
      if (attributes !== undefined) s.setAttributes(attributes);
      s.setAttribute(SPAN_ATTR.outcome, outcome);
      if (outcome === 'error' || outcome === 'timeout') {
        s.setAttribute(SPAN_ATTR.errorType, errorType(ok, value, attributes));
        s.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
  }
}

class OtelCallTrace implements CallTrace {
  readonly #tracer: Tracer;
  readonly #span: Span;
  readonly #context: Context;
  readonly #dependency: string;
  readonly #server: Attributes | undefined;
  #attempts = 0;

  constructor(
    tracer: Tracer,
    span: Span,
    parent: Context,
    dependency: string,
    server: Attributes | undefined,
  ) {
    this.#tracer = tracer;
    this.#span = span;
    this.#context = trace.setSpan(parent, span);
    this.#dependency = dependency;
    this.#server = server;
  }

  attempt(
    kind: AttemptKind,
    attempt: number,
    remainingMs: number,
    timeoutMs: number,
    instance: string | undefined,
    run: () => void,
  ): AttemptTrace {
    this.#attempts = attempt;
    const attributes: Attributes = {
      ...this.#server,
      [SPAN_ATTR.dependency]: this.#dependency,
      [SPAN_ATTR.attempt]: attempt,
      [SPAN_ATTR.attemptKind]: KIND_ATTRS[kind],
      [SPAN_ATTR.attemptTimeout]: timeoutMs,
    };
    setTimeLeft(attributes, remainingMs);
    if (attempt > 1) attributes[SPAN_ATTR.resendCount] = attempt - 1;
    if (instance !== undefined) {
      attributes[SPAN_ATTR.instance] = instance;
      setServer(attributes, instance);
    }
    let span: Span | undefined;
    let within = this.#context;
    try {
      span = this.#tracer.startSpan(
        `${SPAN_NAMES.attempt} ${this.#dependency}`,
        { kind: SpanKind.CLIENT, attributes },
        this.#context,
      );
      within = trace.setSpan(this.#context, span);
    } catch {
      // No attempt span: the attempt runs in the call's context, untraced.
    }
    runWithin(within, run);
    return new OtelAttemptTrace(span, within);
  }

  event(name: TraceEventName, attributes: TraceAttributes): void {
    try {
      this.#span.addEvent(SPAN_EVENTS[name], attributes);
    } catch {
      // The tracer's failure: the decision stands, only its event is lost.
    }
  }

  end(ok: boolean, value: unknown, attributes: TraceAttributes | undefined): void {
    endSpan(this.#span, (span) => {
      if (attributes !== undefined) span.setAttributes(attributes);
      span.setAttribute(SPAN_ATTR.attempts, this.#attempts);
      const status = attributes?.['http.response.status_code'];
      if (!ok || (typeof status === 'number' && status >= 500)) {
        span.setAttribute(SPAN_ATTR.errorType, errorType(ok, value, attributes));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
  }
}

/** `server.address`/`server.port` of an instance's origin (`http://10.0.0.7:8080`), when it is a URL. */
function setServer(attributes: Attributes, origin: string): void {
  if (!origin.includes('://')) return;
  try {
    const url = new URL(origin);
    attributes['server.address'] = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (url.port !== '') attributes['server.port'] = Number(url.port);
  } catch {
    // Not a URL: the instance attribute says it.
  }
}

const REQUEST_KEYS = ['http.request.method', 'server.address', 'server.port', 'url.full'] as const;

const CALL_OPTIONS = Object.freeze({ kind: SpanKind.INTERNAL });

/** The executor's tracer: a span per call started under the context active at the call. */
export class OtelCallTracer implements CallTracer {
  readonly #tracer: Tracer;
  readonly #name: string;
  readonly #spanName: string;

  /** One per instrumented dependency `name`: its span name is spelled once, not per call. */
  constructor(tracer: Tracer, name: string) {
    this.#tracer = tracer;
    this.#name = name;
    this.#spanName = `${SPAN_NAMES.call} ${name}`;
  }

  startCall(
    dependency: string,
    remainingMs: number,
    request: TraceAttributes | undefined,
  ): CallTrace | undefined {
    let parent: Context;
    let span: Span;
    // Attributes are set once the span is known to record: a no-op or sampled-out span costs no object.
    const spanName = dependency === this.#name ? this.#spanName : `${SPAN_NAMES.call} ${dependency}`;
    try {
      parent = context.active();
      span = this.#tracer.startSpan(spanName, CALL_OPTIONS, parent);
    } catch {
      return undefined; // the tracer cannot start a span: this call is not traced
    }
    let recording = false;
    try {
      recording = span.isRecording();
      if (recording) {
        if (request !== undefined) span.setAttributes(request);
        span.setAttribute(SPAN_ATTR.dependency, dependency);
        if (Number.isFinite(remainingMs)) span.setAttribute(SPAN_ATTR.timeLeft, Math.round(remainingMs));
      }
    } catch {
      recording = false;
    }
    if (!recording) {
      endSpan(span, () => {});
      return undefined;
    }
    let server: Attributes | undefined;
    if (request !== undefined) {
      server = {};
      for (const key of REQUEST_KEYS) {
        const value = request[key];
        if (value !== undefined) server[key] = value;
      }
    }
    return new OtelCallTrace(this.#tracer, span, parent, dependency, server);
  }
}
