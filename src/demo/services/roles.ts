import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { type Clock, sleep } from '../../clock/index.js';
import type { DeadlineFields } from '../../server/fields.js';
import type { RunningService } from '../process/child.js';
import type { HopClient, Stack } from '../stacks/types.js';
import { SpanRecorder } from '../trace/recorder.js';
import type { HopSettings, ServiceConfig } from '../types.js';
import { counting as countingAgent, roundRobin, SampledPool, SendCounter } from './dispatchers.js';
import { answer, listen, shut } from './http.js';
import { accountingHeaders, giveUpOf, WorkLedger } from './ledger.js';

type RoleConfig = Extract<ServiceConfig, { role: 'gateway' | 'orders' | 'inventory' }>;

/**
 * The three middle services of the seed's chain, the same code for every stack:
 *
 *   user ─▶ gateway ─(pool of N)─▶ orders ─▶ inventory ─(instances)─▶ supplier × k
 *            GET /checkout ──────▶ /orders/checkout ──▶ /stock ────────▶ /quote
 *            GET /catalog  ──────▶ /catalog (answered by orders: the independent route)
 *
 * Both gateway routes share the gateway → orders pool, the resource the seed's Little's-law story is
 * about: when supplier calls hold its connections, the catalog, which never touches the supplier,
 * waits behind them.
 */
const ROUTES: Record<RoleConfig['role'], Record<string, string | null>> = {
  gateway: { '/checkout': '/orders/checkout', '/catalog': '/catalog' },
  orders: { '/orders/checkout': '/stock', '/catalog': null },
  inventory: { '/stock': '/quote' },
};

/** The route of each role that is part of a checkout: traced (issue #26); the catalog is not. */
const TRACED: Record<RoleConfig['role'], string> = {
  gateway: '/checkout',
  orders: '/orders/checkout',
  inventory: '/stock',
};

/** The catalog is answered by orders from local data: a short, fixed piece of work. */
const CATALOG_WORK_MS = 3;
const MAX_LATENCY_SAMPLES = 20_000;

/** What one scenario uses and the next one replaces: accounting, pools, the stack's client. */
interface Generation {
  readonly ledger: WorkLedger;
  readonly counter: SendCounter;
  /** Calls the stack's client refused locally (prazo's throttle), per bucket. */
  readonly throttled: SendCounter;
  readonly pool: SampledPool | undefined;
  readonly dispatcher: Dispatcher;
  readonly client: HopClient;
  /**
   * Gateway only: the catalog's own client on the same pool (a bulkhead: the checkout client's
   * concurrency limit, under prazo, never refuses a catalog request).
   */
  readonly catalogClient: HopClient | undefined;
  readonly latencies: number[];
  /** The checkouts' spans this scenario (issue #26: the report's trace waterfall). */
  readonly recorder: SpanRecorder;
}

const NEXT_HOP: Record<RoleConfig['role'], string> = {
  gateway: 'orders',
  orders: 'inventory',
  inventory: 'supplier',
};

function createGeneration(config: RoleConfig, hop: HopSettings, stack: Stack, clock: Clock): Generation {
  const counter = new SendCounter(clock, config.bucketMs);
  const counting: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
    counter.count();
    return dispatch(opts, handler);
  };
  const pool =
    config.role === 'gateway'
      ? new SampledPool(config.downstream[0]!, config.poolConnections ?? 10, clock)
      : undefined;
  // Several instances: prazo's client picks among them (SPEC X5); the others get a round robin below.
  const picks = stack.picksInstances === true && config.downstream.length > 1;
  const dispatcher = pool
    ? pool.pool.compose(counting)
    : picks
      ? countingAgent(counter)
      : roundRobin(config.downstream, counter);
  const throttled = new SendCounter(clock, config.bucketMs);
  // Spans: prazo's client through the executor's tracing seam; every request on the wire carries
  // `traceparent` (and is the attempt span of a stack without an executor) through the interceptor.
  const recorder = new SpanRecorder({ service: config.role, clock });
  const client = stack.client({
    onThrottled: () => throttled.count(),
    name: NEXT_HOP[config.role],
    origin: config.downstream[0]!,
    ...(picks ? { origins: config.downstream } : {}),
    dispatcher: dispatcher.compose(recorder.interceptor(NEXT_HOP[config.role])),
    hop,
    clock,
    tracer: recorder.tracer,
  });
  const catalogClient =
    config.role === 'gateway'
      ? stack.client({
          name: NEXT_HOP[config.role],
          origin: config.downstream[0]!,
          dispatcher,
          hop: hop.stack === 'prazo' ? { ...hop, capacity: undefined } : hop,
          clock,
        })
      : undefined;
  return {
    ledger: new WorkLedger(clock, config.bucketMs),
    counter,
    throttled,
    pool,
    dispatcher,
    client,
    catalogClient,
    latencies: [],
    recorder,
  };
}

async function retire(generation: Generation): Promise<void> {
  await generation.client.close().catch(() => {});
  await generation.catalogClient?.close().catch(() => {});
  await generation.pool?.close();
  await generation.dispatcher.destroy().catch(() => {});
}

export async function startRole(config: RoleConfig, stack: Stack, clock: Clock): Promise<RunningService> {
  let hop = config.hop;
  let gen = createGeneration(config, hop, stack, clock);
  const started = new WeakSet<IncomingMessage>();
  const ends = new WeakMap<IncomingMessage, () => void>();

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    started.add(req);
    const g = gen; // a request belongs to the generation it arrived in
    try {
      const path = (req.url ?? '/').split('?')[0]!;
      const routes = ROUTES[config.role];
      if (!(path in routes)) return answer(res, 404, { error: 'no such route' });
      const next = routes[path];
      if (next === null || next === undefined) {
        await sleep(clock, CATALOG_WORK_MS);
        return answer(res, 200, { items: ['sku-1', 'sku-2'], from: config.role });
      }
      const t0 = clock.now();
      try {
        const client = next === '/catalog' ? (g.catalogClient ?? g.client) : g.client;
        const reply = await client.get(next, accountingHeaders(req.headers), req);
        if (reply.status === 200) {
          if (g.latencies.length < MAX_LATENCY_SAMPLES) g.latencies.push(clock.now() - t0);
          return answer(res, 200, { ok: true, from: config.role });
        }
        const failure = stack.failure(
          { status: reply.status },
          { ...config, dependency: NEXT_HOP[config.role], req },
        );
        const cause = reply.body.slice(0, 300);
        answer(res, failure.status, { error: `${next} answered ${reply.status}: ${cause}` }, failure.headers);
      } catch (error) {
        const failure = stack.failure(error, { ...config, dependency: NEXT_HOP[config.role], req });
        answer(res, failure.status, { error: String(error) }, failure.headers);
      }
    } finally {
      ends.get(req)?.();
    }
  };

  const inner = stack.serve(handler, { clock, ...(config.deadline ? { deadline: config.deadline } : {}) });
  const outer: RequestListener = (req, res) => {
    const ended = gen.ledger.begin(req.headers);
    const path = (req.url ?? '/').split('?')[0]!;
    const span =
      path === TRACED[config.role] ? gen.recorder.startServer(`GET ${path}`, req.headers) : undefined;
    span?.note({ giveUpEpochMs: giveUpOf(req.headers) });
    ends.set(
      req,
      span === undefined
        ? ended
        : () => {
            ended();
            span.end({ status: res.headersSent ? res.statusCode : undefined });
          },
    );
    // A request the stack refuses before the handler runs (prazo: already expired) ends with its answer.
    res.once('close', () => {
      if (!res.writableFinished) span?.event('caller hung up');
      if (!started.has(req)) ends.get(req)?.();
    });
    if (span === undefined) inner(req, res);
    else {
      span.run(() => inner(req, res));
      // prazo's server has read the request's deadline by now (it admits or refuses it at once).
      span.note({ deadlineEpochMs: (req as IncomingMessage & Partial<DeadlineFields>).deadline?.epochMs() });
    }
  };
  const { server, port } = await listen(outer);

  return {
    port,
    report: (full) => ({
      role: config.role,
      stack: config.stack,
      ledger: gen.ledger.report(),
      arrivals: gen.ledger.arrivals(),
      sent: gen.counter.snapshot(),
      ...(config.stack === 'prazo' ? { throttled: gen.throttled.snapshot() } : {}),
      ...(full ? { downstreamLatencies: [...gen.latencies] } : {}),
      ...(gen.pool ? { pool: { connections: gen.pool.connections, samples: gen.pool.samples() } } : {}),
    }),
    traces: () => gen.recorder.collect(),
    reset: async (request) => {
      const old = gen;
      hop = request.hop ?? hop;
      gen = createGeneration(config, hop, stack, clock);
      server.closeIdleConnections();
      await retire(old); // in-flight downstream calls of the last scenario fail now: their work is cut
    },
    close: async () => {
      await shut(server);
      await retire(gen);
    },
  };
}
