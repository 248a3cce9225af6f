import { type AddressInfo, createServer, Socket } from 'node:net';
import { CRASH_SCRIPT, NEVER_ACCEPT_SCRIPT, spawnChildServer } from './child.js';
import type { FaultServer } from './http-faults.js';
import { RequestLog } from './log.js';

/** Transport-level faults on 127.0.0.1: nothing listening, a connect black hole, a crashing server. */

/** A port that was just free: bound, read, closed. Connecting to it is refused (RST). */
export async function startRefused(): Promise<FaultServer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1' }, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    name: 'refused',
    origin: `http://127.0.0.1:${port}`,
    log: new RequestLog(),
    close: async () => {},
  };
}

/** Opens a TCP connection; true when the handshake completed within `waitMs`. */
function connectWithin(port: number, waitMs: number, keep: Socket[]): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    keep.push(socket);
    socket.on('error', () => {});
    const timer = setTimeout(() => resolve(false), waitMs);
    socket.connect(port, '127.0.0.1', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * Connect black hole: a listener with `backlog: 1` whose process never calls accept(). Filler
 * connections fill its accept queue; from then on the kernel drops every new SYN, so a client's
 * connect hangs (SYN retransmits) until its own connect timeout cuts it. Nothing is ever accepted,
 * so the log stays empty by construction.
 */
export async function startBlackHole(): Promise<FaultServer> {
  const child = await spawnChildServer(NEVER_ACCEPT_SCRIPT);
  const fillers: Socket[] = [];
  let full = false;
  for (let i = 0; i < 16 && !full; i += 1) full = !(await connectWithin(child.port, 250, fillers));
  if (!full) {
    for (const s of fillers) s.destroy();
    await child.kill();
    throw new Error('black hole: the accept queue never filled after 16 connections');
  }
  return {
    name: 'black hole',
    origin: `http://127.0.0.1:${child.port}`,
    log: new RequestLog(),
    close: async () => {
      for (const s of fillers) s.destroy();
      await child.kill();
    },
  };
}

/**
 * A server process that dies (SIGKILL) as soon as it has read a request head: the client sees the
 * connection drop with no response byte, and any later attempt is refused, as after a real crash.
 */
export async function startCrash(): Promise<FaultServer> {
  const log = new RequestLog();
  const child = await spawnChildServer(CRASH_SCRIPT, (msg) => {
    const headers: Record<string, string | undefined> = {
      'idempotency-key': typeof msg.key === 'string' ? msg.key : undefined,
      'x-deadline-epoch-ms': typeof msg.deadline === 'string' ? msg.deadline : undefined,
    };
    log.record(String(msg.method), String(msg.path), headers);
  });
  return {
    name: 'crash mid-request',
    origin: `http://127.0.0.1:${child.port}`,
    log,
    settle: () => child.drained(300),
    close: () => child.kill(),
  };
}
