import type { LookupFunction } from 'node:net';
import { slowResolver } from '../faults/dns.js';
import {
  type FaultServer,
  headersAfter,
  neverAnswer,
  resetMidBody,
  stalledBody,
  startHttpFault,
  statusThenOk,
} from '../faults/http-faults.js';
import { startBlackHole, startCrash, startRefused } from '../faults/socket-faults.js';

/**
 * The faults of the matrix and what each must produce (SPEC C2, D6, R2-R5). Phase timeouts are set
 * large enough that the tolerance the issue allows (max(20 ms, 10 %)) is a few tens of ms: the
 * machine is two cores shared with other builds.
 */

export const TIMEOUTS = Object.freeze({ connectMs: 300, responseMs: 400, bodyMs: 400, deadlineMs: 3_000 });

/** The tolerance on a phase timer: max(20 ms, 10 % of the configured time). */
export const tolerance = (ms: number): number => Math.max(20, ms * 0.1);

/** The phase whose timer must cut the call, or how the call ends without one. */
export type Expected =
  | { readonly phase: 'connect' | 'response' | 'body'; readonly code: string }
  | { readonly phase: 'none'; readonly code: RegExp; readonly maxMs: number };

/** A running fault plus what the client must be told to reach it. */
export interface Staged {
  readonly server: FaultServer;
  /** The origin the client uses (a host name when a resolver is part of the fault). */
  readonly origin: string;
  readonly lookup?: LookupFunction;
  stop(): Promise<void>;
}

export interface FaultCase {
  readonly name: string;
  readonly stage: () => Promise<Staged>;
  /** Outcome of the first attempt; `retried` says what a retry of an idempotent call may lead to. */
  readonly expected: Expected;
  /** Copies the server sees of a call that is not retried: 0 when the fault is before the server. */
  readonly seen: 0 | 1;
  /** When an idempotent call may be retried after this fault (SPEC R2, R3), what it then ends with. */
  readonly retried?: { readonly code: RegExp; readonly seen: number };
  /** The error is raised while reading the body, after the head arrived. */
  readonly inBody?: boolean;
}

const plain = async (server: Promise<FaultServer>): Promise<Staged> => {
  const s = await server;
  return { server: s, origin: s.origin, stop: () => s.close() };
};

/** A healthy server reached through a resolver that answers only after twice the connect timeout. */
async function slowDns(): Promise<Staged> {
  const dns = slowResolver(TIMEOUTS.connectMs * 2);
  const s = await startHttpFault('ok behind slow DNS', statusThenOk(200, undefined, 0));
  return {
    server: s,
    origin: `http://${dns.host}:${new URL(s.origin).port}`,
    lookup: dns.lookup as unknown as LookupFunction,
    stop: async () => {
      dns.close();
      await s.close();
    },
  };
}

const connectTimeout: Expected = { phase: 'connect', code: 'CONNECT_TIMEOUT' };
const responseTimeout: Expected = { phase: 'response', code: 'RESPONSE_TIMEOUT' };

export const FAULTS: readonly FaultCase[] = [
  {
    name: 'connection refused',
    seen: 0,
    stage: () => plain(startRefused()),
    expected: { phase: 'none', code: /^ECONNREFUSED$/, maxMs: 100 },
    retried: { code: /^ECONNREFUSED$/, seen: 0 },
  },
  { name: 'connect black hole', seen: 0, stage: () => plain(startBlackHole()), expected: connectTimeout },
  {
    name: 'accept, never answer',
    seen: 1,
    stage: () => plain(startHttpFault('silent', neverAnswer)),
    expected: responseTimeout,
  },
  {
    name: 'headers after a delay',
    seen: 1,
    stage: () => plain(startHttpFault('slow head', headersAfter(TIMEOUTS.responseMs * 2))),
    expected: responseTimeout,
  },
  {
    name: 'body stalls',
    seen: 1,
    stage: () => plain(startHttpFault('stall', stalledBody)),
    expected: { phase: 'body', code: 'BODY_TIMEOUT' },
    inBody: true,
  },
  {
    name: 'reset mid-body',
    seen: 1,
    stage: () => plain(startHttpFault('reset', resetMidBody(50))),
    expected: { phase: 'none', code: /^(ECONNRESET|UND_ERR_SOCKET)$/, maxMs: 150 },
    inBody: true,
  },
  {
    name: 'crash mid-request',
    seen: 1,
    stage: () => plain(startCrash()),
    expected: { phase: 'none', code: /^(UND_ERR_SOCKET|ECONNRESET)$/, maxMs: 100 },
    retried: { code: /^ECONNREFUSED$/, seen: 1 },
  },
  {
    name: '503 + Retry-After > deadline',
    seen: 1,
    stage: () => plain(startHttpFault('503', statusThenOk(503, '30', Number.POSITIVE_INFINITY))),
    expected: { phase: 'none', code: /^HTTP 503$/, maxMs: 100 },
  },
  {
    name: '429 + Retry-After < deadline',
    seen: 1,
    stage: () => plain(startHttpFault('429', statusThenOk(429, '1', 1))),
    expected: { phase: 'none', code: /^HTTP 429$/, maxMs: 100 },
    retried: { code: /^HTTP 200$/, seen: 2 },
  },
  { name: 'slow DNS (resolver stub)', seen: 0, stage: slowDns, expected: connectTimeout },
];
