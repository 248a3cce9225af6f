import type { IncomingMessage } from 'node:http';
import { executorOf } from '../../dependency/transport.js';
import { DependencyFailedError } from '../../errors/dependency.js';
import { createHttpClient } from '../../http/client.js';
import { createLatencyRecorder } from '../../latency/recorder.js';
import type { DeadlineFields } from '../../server/fields.js';
import { withIncomingDeadline } from '../../server/node.js';
import { pushbackAnswer } from '../../server/pushback.js';
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
 * - a hedge after the live p97 on the supplier's reads (H1, H2; the p97 for the issue-15 load bar,
 *   `constants.ts`), the calibrated one until the library's live window has enough samples (which in
 *   scenarios of seconds it never has: `fallback-source.ts`), sent while the median is left;
 * - a handler whose caller hung up stops its downstream calls (D7);
 * - adaptive throttling (on by default): once most supplier attempts fail, calls are refused locally
 *   with a probability that follows the failed share, 10% still probing (issue 23);
 * - capacity-aware waiting: each hop holds at most what the gateway's pool can give the checkout
 *   chain, and an attempt holding a slot waits up to the deadline instead of its calibrated timeout
 *   (a slow supplier's answers arrive; a hung one holds a bounded number of connections);
 * - several instances (the suppliers) are one client's `origins`: power of two choices over
 *   peak-EWMA, a retry and a hedge to another instance, ejection of the failing or slow one (X5).
 * When its own dependency fails, for any reason, a service answers with prazo/server's pushback
 * (`pushbackAnswer`: 503 or 504, `grpc-retry-pushback-ms: -1`, a `Retry-After` of the seconds its
 * deadline has left), and prazo's clients upstream neither retry nor hedge it (X6): retries happen
 * once, next to the failure, where one budget can see them (the SRE book's "retry at one layer").
 * Budgets at every hop would otherwise compound: 1.1 × 1.1 × 1.1.
 */

function prazoClient(options: HopClientOptions): HopClient {
  const { hop, clock, dispatcher, origin, origins, name, onThrottled, tracer } = options;
  if (hop.stack !== 'prazo') throw new Error('prazo client needs prazo hop settings');
  const http = createHttpClient({
    name,
    ...(origins === undefined ? { origin } : { origins: [...origins] }),
    p99Ms: hop.p99Ms,
    attempts: hop.attempts,
    retryBudget: {
      windowMs: hop.budget.windowMs,
      maxRatio: hop.budget.ratio,
      minPerSecond: hop.budget.minPerSecond,
    },
    hedge: hop.hedge && { percentile: P.hedgePercentile },
    recorder: withCalibratedFallback(createLatencyRecorder({ clock }), {
      ...hop,
      hedgePercentile: P.hedgePercentile,
    }),
    // Capacity-aware waiting (issue 23): at most `maxInFlight` attempts, each waiting up to the
    // deadline; past that a call fails at once (topology.ts `hopCapacity`).
    ...(hop.capacity === undefined ? {} : { concurrencyLimit: { ...hop.capacity, patience: true } }),
    // The hung supplier's patient failures are few a second: the window needs fewer (constants.ts).
    throttle: { minRequests: P.throttleMinRequests },
    dispatcher,
    clock,
  });
  if (tracer !== undefined) executorOf(http.dependency)!.plan.events.tracer = tracer; // the executor's seam (#26)
  if (onThrottled !== undefined)
    http.on((event) => {
      if (event.type === 'throttled') onThrottled();
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
  picksInstances: true,
  client: prazoClient,
  serve: (handler, options) =>
    withIncomingDeadline(handler, {
      clock: options.clock,
      ...(options.deadline ? { defaultMs: options.deadline.defaultMs, maxMs: options.deadline.maxMs } : {}),
    }),
  // The library's pushback (SPEC X6): a failed answer is the dependency's failure, a thrown prazo
  // error (budget refused, timeout, deadline, connect) says what failed. Anything else is this
  // service's own fault: a 500, which callers may retry.
  failure: (cause, { dependency, req }): FailureAnswer => {
    const status = (cause as { status?: unknown } | null)?.status;
    const error =
      typeof status === 'number' ? new DependencyFailedError({ dependency, httpStatus: status }) : cause;
    const deadline = (req as IncomingMessage & Partial<DeadlineFields>).deadline;
    const answer = pushbackAnswer(error, deadline === undefined ? {} : { deadline });
    return answer === undefined
      ? { status: 500, headers: {} }
      : { status: answer.status, headers: answer.headers };
  },
};
