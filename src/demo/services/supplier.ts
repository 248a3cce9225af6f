import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { type Clock, systemClock, type Timer } from '../../clock/index.js';
import { DEMO_DEFAULTS, SUPPLIER_PROFILE } from '../constants.js';
import type { RunningService } from '../process/child.js';
import { createRandom, logNormal, logNormalQuantile } from '../random.js';
import { SpanRecorder } from '../trace/recorder.js';
import type { ServiceConfig, SupplierBehaviour } from '../types.js';
import { answer, listen, shut } from './http.js';
import { WorkLedger } from './ledger.js';

type SupplierConfig = Extract<ServiceConfig, { role: 'supplier' }>;

/** The supplier's healthy p99, from its own profile (≈ 250 ms). */
export const SUPPLIER_P99_MS = logNormalQuantile(SUPPLIER_PROFILE.medianMs, SUPPLIER_PROFILE.sigma, 0.99);

/**
 * How long one answer takes under a behaviour, or `undefined` for "never" (hang). `random` is the
 * instance's seeded generator, so a scenario replays the same latencies.
 */
export function answerDelayMs(behaviour: SupplierBehaviour, random: () => number): number | undefined {
  const P = SUPPLIER_PROFILE;
  const jittered = (ms: number): number => ms * (1 + P.jitter * (2 * random() - 1));
  switch (behaviour.kind) {
    case 'healthy':
      return logNormal(random, P.medianMs, P.sigma, P.minMs);
    case 'slow':
      return jittered(SUPPLIER_P99_MS * behaviour.factor);
    case 'stall':
      return random() < behaviour.probability
        ? jittered(behaviour.stallMs)
        : logNormal(random, P.medianMs, P.sigma, P.minMs);
    case 'fail':
      return logNormal(random, P.medianMs, P.sigma, P.minMs);
    case 'outage': // past its outage the instance is healthy (`startSupplier` switches it)
      return logNormal(random, P.medianMs, P.sigma, P.minMs);
    case 'hang':
    case 'refuse':
      return undefined;
  }
}

/**
 * The supplier double (SPEC X1): one instance of the last service of the chain. It is a third party:
 * it knows nothing of deadlines and finishes what it started even when its caller has gone (as a
 * real service does unless it is built to cancel), so its late work counts as wasted. `refuse`
 * closes its port, so connections to it are refused; any other behaviour listens on it again.
 */
export async function startSupplier(
  config: SupplierConfig,
  clock: Clock = systemClock,
): Promise<RunningService> {
  let behaviour = config.behaviour;
  let random = createRandom(config.seed);
  let ledger = new WorkLedger(clock, DEMO_DEFAULTS.bucketMs);
  const service = `supplier #${config.instance + 1}`;
  let recorder = new SpanRecorder({ service, clock }); // its server spans (issue #26)
  const timers = new Set<Timer>();

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const ended = ledger.begin(req.headers);
    const span = recorder.startServer(`GET ${(req.url ?? '/').split('?')[0]}`, req.headers);
    const end = (): void => {
      ended();
      span.end({ status: res.headersSent ? res.statusCode : undefined });
    };
    req.resume();
    const delay = answerDelayMs(behaviour, random);
    const fails = behaviour.kind === 'fail' && random() < behaviour.probability;
    if (delay === undefined) {
      res.once('close', end); // hung: the work lasts until the caller hangs up
      return;
    }
    const timer = clock.setTimer(() => {
      timers.delete(timer);
      if (fails) answer(res, 503, { error: 'unavailable', instance: config.instance });
      else answer(res, 200, { item: 'sku-1', available: 7, instance: config.instance });
      end();
    }, delay);
    timers.add(timer);
  };

  const first = await listen(handler);
  const port = first.port;
  let server: Server | undefined = first.server;
  let back: Timer | undefined; // an outage's end
  const stop = async (): Promise<void> => {
    for (const timer of timers) clock.clearTimer(timer);
    timers.clear();
    if (back !== undefined) clock.clearTimer(back);
    back = undefined;
    if (server !== undefined) await shut(server);
    server = undefined;
  };
  const apply = async (next: SupplierBehaviour): Promise<void> => {
    behaviour = next;
    if (next.kind === 'refuse' || next.kind === 'outage') await stop();
    else if (server === undefined) server = (await listen(handler, port)).server;
    if (next.kind === 'outage') {
      // Down from now (the scenario's reset) for `downMs`, then listening again, healthy.
      back = clock.setTimer(() => {
        back = undefined;
        void apply({ kind: 'healthy' });
      }, next.downMs);
    }
  };
  await apply(behaviour);

  return {
    port,
    report: () => ({
      role: 'supplier',
      stack: config.stack,
      instance: config.instance,
      ledger: ledger.report(),
      arrivals: ledger.arrivals(),
    }),
    traces: () => recorder.collect(),
    reset: async (request) => {
      // Cut what the previous scenario left (answers due later, hung requests), then start over.
      await stop();
      ledger = new WorkLedger(clock, DEMO_DEFAULTS.bucketMs);
      recorder = new SpanRecorder({ service, clock });
      random = createRandom(config.seed);
      await apply(request.behaviour ?? behaviour);
    },
    close: stop,
  };
}
