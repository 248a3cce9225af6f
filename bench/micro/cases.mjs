import { createRequire } from 'node:module';
import { handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { prazo, Unavailable } from '../lib/prazo.mjs';

/**
 * Micro cases: the fixed cost of one operation, in ns. Each case's `setup()` returns `op`, called in a
 * tight loop; `async: true` cases are awaited one after the other (the cost of a promise round trip is
 * part of what they measure, as it is for their callers). Baselines come first; prazo's cases reference
 * the baseline they should be read against.
 */
const RESOLVED = Promise.resolve(1);

/**
 * undici's core without the network: its `DispatcherBase` (what an Agent, a Pool and a Client
 * dispatch through, handler API checks included) whose dispatch answers every request at once, in a
 * microtask: 200, four headers, a 2-byte body. What prazo/http adds to a request is measured on it
 * without a socket, a parser or the server sharing the machine's two cores: the HTTP suite's ratios
 * move by ±20% from one round to the next on a busy machine, these by a few percent. It answers in the
 * API its handler speaks, as undici's own core does: undici 7 hands it legacy handlers (`onConnect`,
 * `onHeaders` with raw buffers), undici 8 handlers of the current API only (`onRequestStart` with a
 * controller, `onResponseStart` with parsed headers). Not available where undici's internals are not
 * where undici 7 and 8 keep them.
 */
function inProcessCore() {
  const require = createRequire(import.meta.url);
  let DispatcherBase;
  let symbols;
  try {
    require('undici'); // undici's index gives every dispatcher its request(), stream(), ...
    DispatcherBase = require('undici/lib/dispatcher/dispatcher-base.js');
    symbols = require('undici/lib/core/symbols.js');
  } catch {
    throw new Unavailable(
      "undici's internals (lib/dispatcher/dispatcher-base.js) are not where undici 7 and 8 keep them",
    );
  }
  const { kDispatch, kClose, kDestroy } = symbols;
  const entries = [
    ['content-type', 'text/plain'],
    ['content-length', '2'],
    ['date', 'Wed, 02 Dec 2026 16:00:00 GMT'],
    ['keep-alive', 'timeout=5'],
  ];
  const head = entries.flat().map((t) => Buffer.from(t));
  const headers = Object.fromEntries(entries);
  const body = Buffer.from('ok');
  const resume = () => {};
  /** The controller undici 8's core hands a current-API handler (its RequestController, reduced). */
  class Controller {
    aborted = false;
    paused = false;
    reason = null;
    rawHeaders = head;
    rawTrailers = null;
    abort(reason) {
      if (this.aborted) return;
      this.aborted = true;
      this.reason = reason;
    }
    pause() {
      this.paused = true;
    }
    resume() {
      this.paused = false;
    }
  }
  class Core extends DispatcherBase {
    [kDispatch](_opts, handler) {
      if (typeof handler.onConnect !== 'function') {
        const controller = new Controller();
        handler.onRequestStart?.(controller, {});
        queueMicrotask(() => {
          if (controller.aborted) return handler.onResponseError?.(controller, controller.reason);
          handler.onResponseStart?.(controller, 200, headers, 'OK');
          if (!controller.aborted) handler.onResponseData?.(controller, body);
          if (!controller.aborted) handler.onResponseEnd?.(controller, {});
        });
        return true;
      }
      const abort = () => {}; // named as undici 7's own core names it
      handler.onConnect(abort);
      queueMicrotask(() => {
        handler.onHeaders(200, head, resume, 'OK');
        handler.onData(body);
        handler.onComplete([]);
      });
      return true;
    }
    [kClose]() {
      return Promise.resolve();
    }
    [kDestroy]() {
      return Promise.resolve();
    }
  }
  return new Core();
}

const CORE_ORIGIN = 'http://127.0.0.1:9';

/**
 * Picks of the instance set behind `createHttpClient({ origins })` (SPEC X5): power of two choices over
 * peak-EWMA × (in flight + 1), ejection with its latency windows on, `n` instances. `now` is given, as
 * the attempt gives it (it has read the clock already): a synthetic instant 1 µs later per operation,
 * so the estimates decay and the windows close as under 1,000,000 picks a second. `settle: false`
 * releases each pick as the neutral end of an attempt (the pick's cost); `true` settles it with a
 * success (the peak-EWMA update and the latency window's sketch too: what a whole attempt pays).
 */
async function pickCase(n, settle) {
  const InstanceSet = await prazo('balance', 'InstanceSet');
  const ejectionSettings = await prazo('balance', 'ejectionSettings');
  const systemClock = await prazo('clock', 'systemClock');
  const set = new InstanceSet({
    clock: systemClock,
    random: Math.random,
    decayMs: 10_000,
    initialEstimateMs: 30,
    ejection: ejectionSettings(true),
    floorMs: () => 50,
    penaltyMs: () => 200,
  });
  let now = systemClock.now();
  const key = (i) => `http://10.0.${i >> 8}.${i & 255}:8080`;
  set.replace(
    Array.from({ length: n }, (_, i) => ({ key: key(i), value: i })),
    now,
  );
  let i = 0;
  return () => {
    now += 0.001;
    const instance = set.pick(now);
    i = (i + 1) & 1023;
    set.settle(instance, settle ? 'success' : 'neutral', 5 + (i & 15), now);
    return instance;
  };
}

/**
 * The adaptive throttle's decision (issue 23: ≤ 50 ns, constant memory): `admit` at an instant 1 µs
 * later per operation (the window turns over as under a million calls a second), then the attempt's
 * end counted, accepted or not. Memory is its two rings of 10 counters, whatever the rate.
 */
async function throttleCase(healthy) {
  const AdaptiveThrottle = await prazo('throttle', 'AdaptiveThrottle');
  const systemClock = await prazo('clock', 'systemClock');
  const throttle = new AdaptiveThrottle(undefined, systemClock, Math.random);
  let now = systemClock.now();
  return () => {
    now += 0.001;
    const admitted = throttle.admit(now);
    if (admitted) throttle.count(now, healthy);
    return admitted;
  };
}

/** undici's request() on the in-process core, its body dumped: the floor of prazo's request(). */
function bareCoreRequest() {
  const core = inProcessCore();
  const options = { origin: CORE_ORIGIN, path: '/', method: 'GET' };
  return async () => (await core.request(options)).body.dump();
}

/** prazo's request() on the same core, with the HTTP suite's settings. */
async function prazoCoreRequest() {
  const [createHttpClient, Deadline, createRetryBudget] = await Promise.all([
    prazo('http', 'createHttpClient'),
    prazo('deadline', 'Deadline'),
    prazo('budget', 'createRetryBudget'),
  ]);
  const client = createHttpClient({
    name: 'bench',
    origin: CORE_ORIGIN,
    dispatcher: inProcessCore(),
    p99Ms: 1_000,
    attempts: 2,
    defaultDeadlineMs: 5_000,
    retryBudget: createRetryBudget(),
    hedge: { minDelayMs: 1_000 },
  });
  return async () => (await client.request({ path: '/', deadline: Deadline.after(5_000) })).body.dump();
}

/** undici's request() through `core.compose(interceptor())`, the origin managed with the HTTP suite's settings. */
async function interceptorCoreRequest() {
  const [interceptor, Deadline] = await Promise.all([
    prazo('http', 'interceptor'),
    prazo('deadline', 'Deadline'),
  ]);
  const dependencies = {
    [CORE_ORIGIN]: {
      name: 'bench',
      p99Ms: 1_000,
      attempts: 2,
      defaultDeadlineMs: 5_000,
      hedge: { minDelayMs: 1_000 },
    },
  };
  const dispatcher = inProcessCore().compose(interceptor({ dependencies }));
  return async () => {
    const options = {
      origin: CORE_ORIGIN,
      path: '/',
      method: 'GET',
      prazo: { deadline: Deadline.after(5_000) },
    };
    return (await dispatcher.request(options)).body.dump();
  };
}

export const MICRO_CASES = [
  {
    name: 'await (bare)',
    kind: 'baseline',
    about: 'awaiting an already resolved promise: the floor of any async wrapper',
    async: true,
    setup: async () => () => RESOLVED,
  },
  {
    name: 'cockatiel wrap(retry, timeout)',
    kind: 'baseline',
    about: 'cockatiel 3 retry(2 attempts) + timeout(2 s, aggressive) around a resolved operation',
    async: true,
    setup: async () => {
      const policy = wrap(retry(handleAll, { maxAttempts: 2 }), timeout(2_000, TimeoutStrategy.Aggressive));
      const operation = () => RESOLVED;
      return () => policy.execute(operation);
    },
  },
  {
    name: 'AbortController + abort listener',
    kind: 'baseline',
    about: "a per-call signal someone listens to (Node 20's EventTarget): why prazo's signals are lazy",
    setup: async () => {
      const onAbort = () => {};
      return () => {
        const controller = new AbortController();
        controller.signal.addEventListener('abort', onAbort, { once: true });
        return controller;
      };
    },
  },
  {
    name: 'budget recordOriginal+tryConsume',
    kind: 'prazo',
    about: 'createRetryBudget() defaults (10 s window, 10 buckets), system clock',
    setup: async () => {
      const createRetryBudget = await prazo('budget', 'createRetryBudget');
      const budget = createRetryBudget();
      return () => {
        budget.recordOriginal();
        return budget.tryConsume();
      };
    },
  },
  {
    name: 'throttle decision, healthy',
    kind: 'prazo',
    about: 'AdaptiveThrottle.admit + count (defaults: 1 s window, 10 buckets), every attempt accepted',
    setup: async () => throttleCase(true),
  },
  {
    name: 'throttle decision, refusing 90%',
    kind: 'prazo',
    about:
      'AdaptiveThrottle.admit + count on a dependency failing every attempt (refusals spread by a credit; one random draw per call let through)',
    setup: async () => throttleCase(false),
  },
  {
    name: 'latency record',
    kind: 'prazo',
    about: 'createLatencyRecorder().record(ms, "success") with varying latencies, system clock',
    setup: async () => {
      const createLatencyRecorder = await prazo('latency', 'createLatencyRecorder');
      const recorder = createLatencyRecorder();
      let i = 0;
      return () => {
        i = (i + 1) & 1023;
        recorder.record(1 + i * 0.37, 'success');
      };
    },
  },
  {
    name: 'latency quantile(0.95)',
    kind: 'prazo',
    about: 'the live p95 read that hedging does on every request (served from the per-window cache)',
    setup: async () => {
      const createLatencyRecorder = await prazo('latency', 'createLatencyRecorder');
      const recorder = createLatencyRecorder({ windowMs: 10, minSamples: 1 });
      for (let i = 0; i < 1000; i += 1) recorder.record(1 + (i % 100), 'success');
      await new Promise((r) => setTimeout(r, 25));
      return () => recorder.quantile(0.95);
    },
  },
  {
    name: 'deadline create + header write',
    kind: 'prazo',
    about: 'Deadline.after(1000).toHeaders(): what every outgoing call pays to carry its deadline',
    setup: async () => {
      const Deadline = await prazo('deadline', 'Deadline');
      return () => Deadline.after(1_000).toHeaders();
    },
  },
  {
    name: 'request() on an in-process undici core',
    kind: 'baseline',
    about:
      "undici's request() (its RequestHandler, body stream, handler API checks) on undici's DispatcherBase answering in a microtask, body dumped: the floor of prazo's request()",
    async: true,
    setup: async () => bareCoreRequest(),
  },
  {
    name: 'prazo request() on an in-process undici core',
    kind: 'prazo',
    about:
      "createHttpClient({ dispatcher: core }).request({ path, deadline }) with the HTTP suite's settings (budget, recorder, hedge armed at ≥ 1 s), on the same core: what prazo/http adds to a request, without the network",
    async: true,
    setup: async () => prazoCoreRequest(),
  },
  {
    name: 'request() on an in-process undici core, 50 in flight',
    kind: 'baseline',
    about:
      'the same with 50 calls in flight at once (as a service under load has them): objects that outlive their call show here, as garbage collection',
    async: true,
    inFlight: 50,
    setup: async () => bareCoreRequest(),
  },
  {
    name: 'prazo request() on an in-process undici core, 50 in flight',
    kind: 'prazo',
    about:
      'the same with 50 calls in flight at once: a call kept reachable after its end (by a long-lived table) gets its objects promoted to the old generation, which this case shows and the one above, a call at a time, does not',
    async: true,
    inFlight: 50,
    setup: async () => prazoCoreRequest(),
  },
  {
    name: 'interceptor request() on an in-process undici core, 50 in flight',
    kind: 'prazo',
    about:
      "undici's request() through core.compose(interceptor()) on the same core, the origin managed with the HTTP suite's settings and a deadline per call: what the interceptor adds, without the network (read against the first of the 50-in-flight cases)",
    async: true,
    inFlight: 50,
    setup: async () => interceptorCoreRequest(),
  },
  {
    name: 'executor execute() fixed cost',
    kind: 'prazo',
    about:
      'createDependency({ p99Ms: 50 }).execute(resolved operation, { idempotent: true }): deadline, plan, budget, recording',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const dependency = createDependency({ name: 'bench', p99Ms: 50 });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'executor execute() + otel, no SDK',
    kind: 'prazo',
    about:
      'the same, observed by instrumentPrazo() with no OpenTelemetry SDK installed (the API no-op meter)',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const instrumentPrazo = await prazo('otel', 'instrumentPrazo');
      const dependency = createDependency({ name: 'bench', p99Ms: 50 });
      instrumentPrazo({ dependencies: [dependency] });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'executor execute() + otel, no-op tracer',
    kind: 'prazo',
    about:
      'the same, traced by instrumentPrazo() through a tracer that records nothing (the API no-op tracer behind a provider): the tracing seam installed, one non-recording span started per call (#26)',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const instrumentPrazo = await prazo('otel', 'instrumentPrazo');
      const { ProxyTracerProvider } = await import('@opentelemetry/api');
      const noop = new ProxyTracerProvider().getDelegate();
      const dependency = createDependency({ name: 'bench', p99Ms: 50 });
      instrumentPrazo({
        dependencies: [dependency],
        tracerProvider: { getTracer: (n) => noop.getTracer(n) },
      });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'executor execute() + otel, SDK metrics',
    kind: 'prazo',
    about:
      'the same, observed by instrumentPrazo() into the metrics SDK (a MeterProvider, no exporter): every event recorded',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const instrumentPrazo = await prazo('otel', 'instrumentPrazo');
      const { MeterProvider } = await import('@opentelemetry/sdk-metrics');
      const dependency = createDependency({ name: 'bench', p99Ms: 50 });
      instrumentPrazo({ dependencies: [dependency], meterProvider: new MeterProvider() });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'executor execute() + otel, SDK tracing every span',
    kind: 'prazo',
    about:
      'the same, traced into the tracing SDK recording every span (a BasicTracerProvider, no exporter): two spans per call; sample accordingly (#26)',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const instrumentPrazo = await prazo('otel', 'instrumentPrazo');
      const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
      const dependency = createDependency({ name: 'bench', p99Ms: 50 });
      instrumentPrazo({ dependencies: [dependency], tracerProvider: new BasicTracerProvider() });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'executor execute(), hedging armed',
    kind: 'prazo',
    about: 'the same with a hedge armed at max(live p95, 1 s) that never fires: one timer per call',
    async: true,
    setup: async () => {
      const createDependency = await prazo('dependency', 'createDependency');
      const dependency = createDependency({
        name: 'bench',
        p99Ms: 1_000,
        hedge: { minDelayMs: 1_000 },
        recorder: { windowMs: 50, minSamples: 10 },
      });
      const operation = () => RESOLVED;
      const options = { idempotent: true };
      // Hedging needs a live p95: keep calling until the recorder has a full window.
      for (let i = 0; i < 200 && dependency.recorder.quantile(0.95) === undefined; i += 1) {
        for (let j = 0; j < 20; j += 1) await dependency.execute(operation, options);
        await new Promise((r) => setTimeout(r, 10));
      }
      if (dependency.recorder.quantile(0.95) === undefined) throw new Error('hedging never armed');
      return () => dependency.execute(operation, options);
    },
  },
  {
    name: 'instance pick, 3 instances',
    kind: 'prazo',
    about: 'p2c over peak-EWMA × (in flight + 1), ejection on; released as a neutral end',
    setup: () => pickCase(3, false),
  },
  {
    name: 'instance pick, 100 instances',
    kind: 'prazo',
    about: 'the same over 100 instances: O(1), two random draws whatever the count',
    setup: () => pickCase(100, false),
  },
  {
    name: 'instance pick+settle, 3 instances',
    kind: 'prazo',
    about: 'a pick and its success settled: peak-EWMA update, ejection streak, latency window sketch',
    setup: () => pickCase(3, true),
  },
];
