import type { Behaviour } from '../faults/http-faults.js';
import { answerOk } from '../faults/http-faults.js';

/**
 * The soak's fault mix, shared by the server (parent process) and the driver (child process). The
 * driver picks, per logical call, a kind and a fault with a seeded PRNG and writes the fault into the
 * path (`/soak/<id>/<fault>`); the server inflicts it on the **first** copy of that call only, so a
 * retry (when the client makes one) meets a healthy server.
 */

/** Attempt timeout ceil(80 × 1.4) = 112 ms; the connect timeout defaults to half of it. */
export const SOAK_TIMEOUTS = Object.freeze({ p99Ms: 80, responseTimeoutMs: 100, bodyTimeoutMs: 100 });

/** Faults, with their share of all calls (they add up to the 10 %). */
export const FAULT_MIX = Object.freeze({
  '503': 0.015,
  '500': 0.015,
  '429': 0.01,
  'reset-before': 0.02,
  'slow-head': 0.01,
  'stall-body': 0.01,
  'reset-mid-body': 0.02,
} as const);

export type SoakFault = keyof typeof FAULT_MIX | 'ok';

/** mulberry32 (prazo/testing's seededRandom), so a soak run is reproducible. */
export { seededRandom as prng } from '../../../src/testing/random.js';

export function pickFault(u: number): SoakFault {
  let acc = 0;
  for (const [fault, share] of Object.entries(FAULT_MIX)) {
    acc += share;
    if (u < acc) return fault as SoakFault;
  }
  return 'ok';
}

const status =
  (code: number, retryAfter?: string): Behaviour =>
  ({ res }) => {
    res.writeHead(code, { 'content-length': 2, ...(retryAfter ? { 'retry-after': retryAfter } : {}) });
    res.end('no');
  };

const BEHAVIOURS: Readonly<Record<SoakFault, Behaviour>> = {
  ok: answerOk,
  '503': status(503),
  '500': status(500),
  '429': status(429, '0'),
  'reset-before': ({ res }) => res.socket?.resetAndDestroy(),
  'slow-head': (ctx) => ctx.later(() => answerOk(ctx), SOAK_TIMEOUTS.responseTimeoutMs * 2),
  'stall-body': ({ res }) => {
    res.writeHead(200, { 'content-length': 1024 });
    res.write('x'.repeat(16));
  },
  'reset-mid-body': ({ res, later }) => {
    res.writeHead(200, { 'content-length': 1024 });
    res.write('x'.repeat(16));
    later(() => res.socket?.resetAndDestroy(), 5);
  },
};

/** The server side: the fault named in the path on a call's first copy, 200 on every later one. */
export const soakBehaviour: Behaviour = (ctx) => {
  const fault = (ctx.req.url ?? '').split('/')[3] as SoakFault | undefined;
  const behaviour = ctx.copy === 1 && fault !== undefined ? BEHAVIOURS[fault] : undefined;
  (behaviour ?? answerOk)(ctx);
};
