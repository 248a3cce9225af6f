import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { sleep } from '../../src/clock/clock.js';
import { systemClock } from '../../src/clock/system.js';

/** Real sockets on 127.0.0.1 for the end-to-end test: ports, a listener that never accepts, a scrape. */

export const HOST = '127.0.0.1';

/** A port that was free a moment ago (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, HOST);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The SDK's Prometheus exporter with its own HTTP server on 127.0.0.1. Its `port` option cannot be 0
 * (`config.port || 9464`), so a free port is picked first, and picked again if someone takes it.
 */
export async function startExporter(): Promise<{ exporter: PrometheusExporter; url: string }> {
  for (let attempt = 0; ; attempt += 1) {
    const port = await freePort();
    const exporter = new PrometheusExporter({ host: HOST, port, preventServerStart: true });
    try {
      await exporter.startServer();
      return { exporter, url: `http://${HOST}:${port}/metrics` };
    } catch (error) {
      await exporter.shutdown().catch(() => {});
      if (attempt >= 5 || (error as { code?: string }).code !== 'EADDRINUSE') throw error;
    }
  }
}

/** GET `url` over node:http; resolves with the status and the body. */
export function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** A node:http server on 127.0.0.1 running `handler`. */
export async function startHttp(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ origin: string; close(): Promise<void> }> {
  const server = createHttpServer(handler).listen(0, HOST);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://${HOST}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A connect that hangs, like a dead host: a child process listens with `backlog: 1` and blocks its
 * event loop so it never accepts; once its accept queue is full, the kernel drops further SYNs.
 */
export async function startUnacceptingListener(): Promise<{ origin: string; close(): Promise<void> }> {
  const code = `
    const s = require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(s.address().port + '\\n');
      setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000), 20);
    });`;
  const child: ChildProcess = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout?.once('data', (data) => resolve(Number(String(data).trim())));
  });
  await sleep(systemClock, 150); // the child is now blocked
  const fillers: Socket[] = [];
  for (let i = 0; i < 8; i += 1) {
    const connected = await new Promise<boolean>((resolve) => {
      const socket = connect({ port, host: HOST });
      fillers.push(socket);
      socket.on('error', () => resolve(false));
      const timer = systemClock.setTimer(() => resolve(false), 200);
      socket.once('connect', () => {
        systemClock.clearTimer(timer);
        resolve(true);
      });
    });
    if (!connected) break; // the queue is full: connects hang from now on
  }
  return {
    origin: `http://${HOST}:${port}`,
    close: async () => {
      for (const socket of fillers) socket.destroy();
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}
