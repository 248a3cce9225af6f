import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Runs a small plain-JS server in a child Node process, for faults a process cannot inflict on
 * itself: never accepting connections (its event loop blocked) or dying mid-request (SIGKILL).
 * The child prints one JSON object per line on stdout: first `{ "port": n }`, then one line per
 * request it saw.
 */
export interface ChildServer {
  readonly child: ChildProcess;
  readonly port: number;
  /** Resolves when the child has exited (or at once when it already has). */
  exited(): Promise<void>;
  /** Resolves once every line the child printed has been handled (its stdout closed), or after `maxMs`. */
  drained(maxMs: number): Promise<void>;
  kill(): Promise<void>;
}

export async function spawnChildServer(
  script: string,
  onLine: (line: Record<string, unknown>) => void = () => {},
): Promise<ChildServer> {
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout! });
  const closed = new Promise<void>((resolve) => lines.once('close', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('child server did not report its port in 10 s')), 10_000);
    child.once('exit', (code) => reject(new Error(`child server exited early (code ${code})`)));
    lines.on('line', (text) => {
      const msg = JSON.parse(text) as Record<string, unknown>;
      if (typeof msg.port === 'number') {
        clearTimeout(timer);
        resolve(msg.port);
      } else onLine(msg);
    });
  });
  const exited = (): Promise<void> =>
    child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : exit;
  return {
    child,
    port,
    exited,
    drained: (maxMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, maxMs);
        void closed.then(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited();
      lines.close();
    },
  };
}

/** Listens with a backlog of 1, reports its port, then blocks its event loop: nothing is ever accepted. */
export const NEVER_ACCEPT_SCRIPT = `
const net = require('node:net');
const server = net.createServer();
server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  require('node:fs').writeSync(1, JSON.stringify({ port: server.address().port }) + '\\n');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
});`;

/**
 * An HTTP server that, on its first request head, reports it and kills itself with SIGKILL: a crash
 * mid-request. Later attempts meet a closed port (connection refused), as after a real crash.
 */
export const CRASH_SCRIPT = `
const http = require('node:http');
const fs = require('node:fs');
const server = http.createServer((req) => {
  const h = req.headers;
  fs.writeSync(1, JSON.stringify({ method: req.method, path: req.url,
    key: h['idempotency-key'], deadline: h['x-deadline-epoch-ms'] }) + '\\n');
  process.kill(process.pid, 'SIGKILL');
});
server.listen({ port: 0, host: '127.0.0.1' }, () => {
  fs.writeSync(1, JSON.stringify({ port: server.address().port }) + '\\n');
});`;
