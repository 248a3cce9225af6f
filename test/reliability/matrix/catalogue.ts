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
 * The faults of the matrix and what each must produce (SPEC C2, D6, R2-R5). Phase timeouts are large
 * enough that the tolerance the issue allows (max(20 ms, 10 %)) is a few tens of ms on two shared
 * cores. The attempt timeout is ceil(p99 × 1.4) = 560 ms, above every phase timeout, so each phase
 * is cut by its own timer.
 */

export const CLIENT = Object.freeze({
  p99Ms: 400,
  attempts: 3,
  connectTimeoutMs: 300,
  responseTimeoutMs: 400,
  bodyTimeoutMs: 400,
  deadlineMs: 3_000,
});

/** The tolerance on a phase timer: max(20 ms, 10 % of the configured time). */
export const tolerance = (ms: number): number => Math.max(20, ms * 0.1);

/** How a call ends: its outcome (an error code or `HTTP <status>`), copies seen, attempts made. */
export interface Ending {
  readonly code: RegExp;
  readonly seen: number;
  readonly attempts: number;
  /** Upper bound on the whole call, in ms (fail-fast faults). */
  readonly maxMs?: number;
  /** Lower bound on the whole call, in ms (a Retry-After that must be honoured). */
  readonly minMs?: number;
}

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
  /** The phase timer that must cut every attempt, with its configured time. */
  readonly phase?: 'connect' | 'response' | 'body';
  /** A POST without key: sent at most once, whatever happens (SPEC R5). */
  readonly once: Ending;
  /** GET, and POST with a key: retried when the failure is retryable (SPEC R2-R4). */
  readonly idempotent: Ending;
  /** The error surfaces while reading the body, after the head arrived. */
  readonly inBody?: boolean;
  /** Staged after every other fault's server listens: its port was just freed and must stay free. */
  readonly stageLast?: boolean;
}

export const phaseMs = (phase: FaultCase['phase']): number =>
  phase === 'connect'
    ? CLIENT.connectTimeoutMs
    : phase === 'response'
      ? CLIENT.responseTimeoutMs
      : CLIENT.bodyTimeoutMs;

const plain = async (server: Promise<FaultServer>): Promise<Staged> => {
  const s = await server;
  return { server: s, origin: s.origin, stop: () => s.close() };
};

/** A healthy server reached through a resolver that answers only after twice the connect timeout. */
async function slowDns(): Promise<Staged> {
  const dns = slowResolver(CLIENT.connectTimeoutMs * 2);
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

const same = (e: Ending): Pick<FaultCase, 'once' | 'idempotent'> => ({ once: e, idempotent: e });
const A = CLIENT.attempts;

export const FAULTS: readonly FaultCase[] = [
  {
    name: 'connection refused',
    stage: () => plain(startRefused()),
    stageLast: true,
    once: { code: /^ECONNREFUSED$/, seen: 0, attempts: 1, maxMs: 100 },
    idempotent: { code: /^ECONNREFUSED$/, seen: 0, attempts: A, maxMs: 150 },
  },
  {
    name: 'connect black hole',
    stage: () => plain(startBlackHole()),
    phase: 'connect',
    once: { code: /^CONNECT_TIMEOUT$/, seen: 0, attempts: 1 },
    idempotent: { code: /^CONNECT_TIMEOUT$/, seen: 0, attempts: A },
  },
  {
    name: 'accept, never answer',
    stage: () => plain(startHttpFault('silent', neverAnswer)),
    phase: 'response',
    ...same({ code: /^RESPONSE_TIMEOUT$/, seen: 1, attempts: 1 }),
  },
  {
    name: 'headers after a delay',
    stage: () => plain(startHttpFault('slow head', headersAfter(CLIENT.responseTimeoutMs * 2))),
    phase: 'response',
    ...same({ code: /^RESPONSE_TIMEOUT$/, seen: 1, attempts: 1 }),
  },
  {
    name: 'body stalls',
    stage: () => plain(startHttpFault('stall', stalledBody)),
    phase: 'body',
    inBody: true,
    ...same({ code: /^BODY_TIMEOUT$/, seen: 1, attempts: 1 }),
  },
  {
    name: 'reset mid-body',
    stage: () => plain(startHttpFault('reset', resetMidBody(50))),
    inBody: true,
    ...same({ code: /^(ECONNRESET|UND_ERR_SOCKET)$/, seen: 1, attempts: 1, maxMs: 150 }),
  },
  {
    name: 'crash mid-request',
    stage: () => plain(startCrash()),
    once: { code: /^(UND_ERR_SOCKET|ECONNRESET)$/, seen: 1, attempts: 1, maxMs: 100 },
    // lost before any response byte: retried (SPEC R2); the crashed server then refuses.
    idempotent: { code: /^ECONNREFUSED$/, seen: 1, attempts: A, maxMs: 300 },
  },
  {
    name: '503 + Retry-After > deadline',
    stage: () => plain(startHttpFault('503', statusThenOk(503, '30', Number.POSITIVE_INFINITY))),
    ...same({ code: /^HTTP 503$/, seen: 1, attempts: 1, maxMs: 100 }),
  },
  {
    name: '429 + Retry-After < deadline',
    stage: () => plain(startHttpFault('429', statusThenOk(429, '1', 1))),
    once: { code: /^HTTP 429$/, seen: 1, attempts: 1, maxMs: 100 },
    idempotent: { code: /^HTTP 200$/, seen: 2, attempts: 2, minMs: 1_000 - 20, maxMs: 1_000 + 200 },
  },
  {
    name: 'slow DNS (resolver stub)',
    stage: slowDns,
    phase: 'connect',
    once: { code: /^CONNECT_TIMEOUT$/, seen: 0, attempts: 1 },
    idempotent: { code: /^CONNECT_TIMEOUT$/, seen: 0, attempts: A },
  },
];
