import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { RequestLog } from './log.js';

/**
 * HTTP-level fault behaviours on a real `node:http` server bound to 127.0.0.1 (never another
 * address). Each server counts every request head it receives in a {@link RequestLog}.
 */

/** A running fault: where to send requests, what it saw, and how to stop it. */
export interface FaultServer {
  readonly name: string;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly log: RequestLog;
  /** Waits until `log` is final for the requests already made (a crashed child reports late). */
  settle?(): Promise<void>;
  /** TCP connections open on the server right now (HTTP faults only). */
  openConnections?(): number;
  /** Requests received whose response is neither finished nor cut off by a closed connection. */
  inFlight?(): number;
  close(): Promise<void>;
}

export interface BehaviourContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Copies of this logical call (same path) seen so far, this one included: 1 for the first. */
  readonly copy: number;
  /** A timer owned by the server: cleared when the server closes, so no test leaks one. */
  later(fn: () => void, ms: number): void;
}

export type Behaviour = (ctx: BehaviourContext) => void;

export async function startHttpFault(name: string, behaviour: Behaviour): Promise<FaultServer> {
  const log = new RequestLog();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const pending = new Set<ServerResponse>();
  const later = (fn: () => void, ms: number): void => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };
  const server = createServer({ keepAliveTimeout: 2_000 }, (req, res) => {
    const path = req.url ?? '/';
    log.record(req.method ?? 'GET', path, req.headers);
    pending.add(res);
    res.once('close', () => pending.delete(res));
    req.resume(); // drain any request body; the fault is in the answer
    behaviour({ req, res, copy: log.copies(path), later });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1' }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    origin: `http://127.0.0.1:${port}`,
    log,
    openConnections: () => sockets.size,
    inFlight: () => pending.size,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const BODY = 'ok\n';

/** 200 with a small body, at once. */
export const answerOk: Behaviour = ({ res }) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
  res.end(BODY);
};

/** Accepts the connection, reads the request, never answers (the response phase must cut it). */
export const neverAnswer: Behaviour = () => {};

/** The response head comes `delayMs` after the request: a slow server. */
export const headersAfter =
  (delayMs: number): Behaviour =>
  (ctx) =>
    ctx.later(() => answerOk(ctx), delayMs);

/** Head and the first bytes of a 1 KiB body, then nothing: the body phase must cut it. */
export const stalledBody: Behaviour = ({ res }) => {
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 1024 });
  res.write('x'.repeat(16));
};

/** Head and part of the body, then a TCP RST (SO_LINGER 0) after `afterMs`. */
export const resetMidBody =
  (afterMs = 50): Behaviour =>
  ({ res, later }) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 1024 });
    res.write('x'.repeat(16));
    later(() => res.socket?.resetAndDestroy(), afterMs);
  };

/**
 * The first `failures` copies of each logical call get `status` with `Retry-After: retryAfter`
 * (seconds or an HTTP-date, sent as given); later copies get 200. `failures: Infinity` = always fail.
 */
export const statusThenOk =
  (status: number, retryAfter: string | undefined, failures = 1): Behaviour =>
  (ctx) => {
    if (ctx.copy > failures) {
      answerOk(ctx);
      return;
    }
    const body = `status ${status}\n`;
    const headers: Record<string, string | number> = {
      'content-type': 'text/plain',
      'content-length': body.length,
    };
    if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
    ctx.res.writeHead(status, headers);
    ctx.res.end(body);
  };
