import type { IncomingMessage } from 'node:http';
import { createHttpClient } from '../../http/client.js';
import { createLatencyRecorder } from '../../latency/recorder.js';
import type { DeadlineFields } from '../../server/fields.js';
import { withIncomingDeadline } from '../../server/node.js';
import { PRAZO_STACK_DEFAULTS as P } from '../constants.js';
import { withCalibratedFallback } from './fallback-source.js';
import type { FailureAnswer, HopClient, HopClientOptions, Stack } from './types.js';

/**
 * The prazo stack: each hop is a `createHttpClient` (prazo/http: the retry budget, the attempt plan,
 * hedging at the live p95, phase-split timeouts, the deadline sent on), and each service admits
 * requests with `withIncomingDeadline` (prazo/server):
 * - timeouts from the hop's measured healthy p99: `ceil(p99 × 1.4)` (SPEC C1);
 * - one absolute deadline from the gateway down, capped by each service's own ceiling (D1, D2, D5);
 * - an attempt that cannot fit the time left is not made: fail fast (D4, R6);
 * - retries and hedges paid from one budget per dependency, 10% of the traffic (R1, H3);
 * - a hedge after the live p95 on the supplier's reads (H1, H2), the calibrated one until the live
 *   windows (1 s here: scenarios last seconds) have enough samples;
 * - a handler whose caller hung up stops its downstream calls (D7).
 * When its own dependency fails, for any reason, a service answers 503 with a `Retry-After` longer
 * than any deadline in the chain, so its callers fail now instead of retrying at every hop (R3):
 * retries happen once, next to the failure, where one budget can see them (the SRE book's "retry at
 * one layer"). Budgets at every hop would otherwise compound: 1.1 × 1.1 × 1.1.
 */

function prazoClient(options: HopClientOptions): HopClient {
  const { hop, clock, dispatcher, origin, name } = options;
  if (hop.stack !== 'prazo') throw new Error('prazo client needs prazo hop settings');
  const http = createHttpClient({
    name,
    origin,
    p99Ms: hop.p99Ms,
    attempts: hop.attempts,
    retryBudget: {
      windowMs: hop.budget.windowMs,
      maxRatio: hop.budget.ratio,
      minPerSecond: hop.budget.minPerSecond,
    },
    hedge: hop.hedge,
    recorder: withCalibratedFallback(
      createLatencyRecorder({ windowMs: P.recorderWindowMs, minSamples: P.recorderMinSamples, clock }),
      hop,
    ),
    dispatcher,
    clock,
  });
  return {
    get: async (path, headers, req: IncomingMessage) => {
      const signal = (req as IncomingMessage & Partial<DeadlineFields>).prazoSignal;
      const res = await http.request(path, { headers, ...(signal ? { signal } : {}) });
      return { status: res.statusCode, body: await res.body.text() };
    },
    close: () => http.close(),
  };
}

export const prazoStack: Stack = {
  client: prazoClient,
  serve: (handler, options) =>
    withIncomingDeadline(handler, {
      clock: options.clock,
      ...(options.deadline ? { defaultMs: options.deadline.defaultMs, maxMs: options.deadline.maxMs } : {}),
    }),
  // Whatever the cause (budget refused, timeout, deadline), the answer asks the caller not to come back
  // within its deadline: a 504 would be retried one hop up, each hop paying its own 10%.
  failure: (_cause, options): FailureAnswer => ({
    status: 503,
    headers: { 'retry-after': String(options.retryAfterS ?? 2) },
  }),
};
