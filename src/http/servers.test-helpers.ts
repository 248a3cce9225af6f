import { type ChildProcess, spawn } from 'node:child_process';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { sleep, type Timer } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';

/**
 * Real loopback servers for the HTTP client's tests (127.0.0.1 / ::1 only). Each one records what
 * it received, so a test can assert what reached the dependency, not what the client believes.
 */

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** Becomes true when the connection that carried this request closes. */
  socketClosed: boolean;
}

export interface TestServer {
  readonly origin: string;
  readonly port: number;
  readonly seen: SeenRequest[];
  /** TCP connections accepted so far. */
  connections: number;
  /** Connections currently open. */
  open: number;
  /**
   * The most connections open at once so far, read a turn after each new one arrives: a client that
   * closed one connection and opened the next at once is not counted twice because the old one's
   * close event was still on its way.
   */
  maxOpen: number;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

/**
 * Starts a node:http server on loopback that records every request, then runs `handler`. `port` 0
 * (the default) takes a free one; several loopback addresses (127.0.0.2, ...) can share one port.
 */
export async function startServer(handler: Handler, host = '127.0.0.1', port = 0): Promise<TestServer> {
  const seen: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const index = seen.length;
    const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, socketClosed: false };
    seen.push(entry);
    // One close listener per socket (a keep-alive socket serves many requests), marking them all.
    const socket = req.socket as typeof req.socket & { prazoSeen?: Array<{ socketClosed: boolean }> };
    if (socket.prazoSeen === undefined) {
      const marked: Array<{ socketClosed: boolean }> = [];
      socket.prazoSeen = marked;
      socket.once('close', () => {
        for (const e of marked) e.socketClosed = true;
      });
    }
    socket.prazoSeen.push(entry);
    handler(req, res, index);
  });
  server.keepAliveTimeout = 30_000;
  const state = { connections: 0, open: 0, maxOpen: 0 };
  server.on('connection', (socket) => {
    state.connections += 1;
    state.open += 1;
    setImmediate(() => {
      if (state.open > state.maxOpen) state.maxOpen = state.open;
    });
    socket.on('close', () => {
      state.open -= 1;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  const origin = host.includes(':') ? `http://[${host}]:${bound}` : `http://${host}:${bound}`;
  return Object.assign(state, {
    origin,
    port: bound,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Faults a dependency shows in an incident, as handlers. */
export const faults = {
  ok:
    (body = 'ok'): Handler =>
    (_req, res) =>
      res.end(body),
  /** Accepts and reads the request, never answers. */
  silent: (): Handler => () => {},
  /** Sends the head and part of the body, then stalls forever. */
  stalledBody: (): Handler => (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('0123456789');
  },
  /** Sends the head and part of the body, then resets the connection (RST). */
  resetMidResponse: (): Handler => (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('0123456789', () => systemClock.setTimer(() => res.socket?.resetAndDestroy(), 20));
  },
  /** Resets the connection before any response byte. */
  resetBeforeResponse: (): Handler => (req) => req.socket.resetAndDestroy(),
  status:
    (status: number, headers: Record<string, string> = {}): Handler =>
    (_req, res) => {
      res.writeHead(status, headers);
      res.end(String(status));
    },
  /**
   * Sends the head of `status` with a 100 kB body, then a byte every 10 ms: never silent long enough
   * for a body timeout, so a drain of it lasts as long as its own bound.
   */
  trickling:
    (status = 503): Handler =>
    (_req, res) => {
      res.writeHead(status, { 'content-length': '100000' });
      let timer: Timer | undefined;
      const drip = (): void => {
        res.write('x');
        timer = systemClock.setTimer(drip, 10);
      };
      timer = systemClock.setTimer(drip, 10);
      res.on('close', () => {
        if (timer !== undefined) systemClock.clearTimer(timer);
      });
    },
  /** Runs `handlers[i]` for the i-th request, the last one for every request after. */
  sequence:
    (...handlers: Handler[]): Handler =>
    (req, res, index) =>
      handlers[Math.min(index, handlers.length - 1)]!(req, res, index),
};

export interface UnacceptingListener {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A real connect that hangs: a child process listens on 127.0.0.1 with `backlog: 1` and then blocks
 * its event loop, so it never accepts. Once its accept queue is full (filled here), the kernel drops
 * further SYNs and a client's connect waits without an answer, exactly like a dead host.
 */
export async function startUnacceptingListener(): Promise<UnacceptingListener> {
  const code = `
    const s = require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(s.address().port + '\\n');
      setImmediate(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000));
    });`;
  const child: ChildProcess = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (data) => resolve(Number(String(data).trim())));
  });
  await sleep(systemClock, 100); // the child is now blocked
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 8; i += 1) {
    const connected = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1' });
      fillers.push(socket);
      socket.on('error', () => resolve(false));
      const timer = systemClock.setTimer(() => resolve(false), 150);
      socket.once('connect', () => {
        systemClock.clearTimer(timer);
        resolve(true);
      });
    });
    if (!connected) break; // the queue is full: this connect hangs too
  }
  return {
    port,
    close: async () => {
      for (const s of fillers) s.destroy();
      child.kill('SIGKILL');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

export interface ChildServer {
  readonly origin: string;
  close(): Promise<void>;
}

/**
 * A keep-alive HTTP server in another process that answers every request at once with `ok`: its
 * answers reach this process's sockets even while this process's event loop is blocked.
 */
export async function startChildServer(): Promise<ChildServer> {
  const code = `
    const http = require('node:http');
    const s = http.createServer((req, res) => res.end('ok'));
    s.keepAliveTimeout = 30000;
    s.listen(0, '127.0.0.1', () => process.stdout.write(s.address().port + '\\n'));`;
  const child: ChildProcess = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (data) => resolve(Number(String(data).trim())));
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    close: async () => {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null)
        await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
