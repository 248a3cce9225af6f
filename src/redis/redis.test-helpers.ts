import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { createClient } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { createClient as createClient6 } from 'redis6';
import { sleep, systemClock } from '../clock/index.js';
import { freePort } from '../mysql/mariadb.test-helpers.js';
import type { RedisConnection } from './client.js';

/**
 * A real Redis for the tests, from Debian's `redis-server` (`.ci/run` installs it): 127.0.0.1, a free
 * port, no persistence (`--save '' --appendonly no`), its directory a fresh temp dir. Stop it in
 * afterAll (killed by its own pid). A missing package fails the test file, never skips it.
 */
export interface TestRedis {
  readonly host: '127.0.0.1';
  readonly port: number;
  stop(): Promise<void>;
}

const PATHS = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'];

export async function startRedis(options: { port?: number } = {}): Promise<TestRedis> {
  const binary = PATHS.find((p) => existsSync(p));
  if (binary === undefined) {
    throw new Error(
      `redis-server not found (${PATHS.join(', ')}): install Debian's redis-server ` +
        '(apt-get install -y --no-install-recommends redis-server; .ci/run does)',
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'prazo-redis-'));
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(
    binary,
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = systemClock.setTimer(() => child.kill('SIGKILL'), 5_000);
      await exited;
      systemClock.clearTimer(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const startedAt = systemClock.now();
  while (!output.includes('Ready to accept connections')) {
    if (child.exitCode !== null || systemClock.now() - startedAt > 15_000) {
      await stop();
      throw new Error(`redis-server did not start on 127.0.0.1:${port}:\n${output.slice(-2_000)}`);
    }
    await sleep(systemClock, 20);
  }
  return { host: '127.0.0.1', port, stop };
}

/**
 * A TCP proxy on loopback in front of a server whose replies can be held back per connection (the
 * `hold(n)` of the n-th connection, 0-based): a server that never answers one connection, while it
 * answers the others. `release(n)` lets the held bytes through.
 */
export interface HoldingProxy {
  readonly port: number;
  hold(index: number): void;
  release(index: number): void;
  readonly connections: number;
  close(): Promise<void>;
}

export async function holdingProxy(target: number): Promise<HoldingProxy> {
  const held = new Map<number, Buffer[] | null>();
  const clients: Socket[] = [];
  const upstreams: Socket[] = [];
  const server: Server = createServer((client) => {
    const index = clients.length;
    clients.push(client);
    const upstream = connect(target, '127.0.0.1');
    upstreams.push(upstream);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      const queue = held.get(index);
      if (queue) queue.push(chunk);
      else client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    hold: (index) => held.set(index, []),
    release: (index) => {
      const queue = held.get(index);
      held.set(index, null);
      for (const chunk of queue ?? []) clients[index]?.write(chunk);
    },
    get connections() {
      return clients.length;
    },
    close: async () => {
      for (const s of [...clients, ...upstreams]) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A TCP proxy on loopback that closes a connection under the client: when what the client writes
 * contains `marker` (a key name) and drops are left for it, the bytes are not forwarded and both
 * sockets are destroyed (the command never reaches the server, its reply never comes). `seen(marker)`
 * counts the writes that carried it, dropped or forwarded.
 */
export interface DroppingProxy {
  readonly port: number;
  drop(marker: string, times: number): void;
  seen(marker: string): number;
  readonly connections: number;
  close(): Promise<void>;
}

export async function droppingProxy(target: number): Promise<DroppingProxy> {
  const drops = new Map<string, number>();
  const seen = new Map<string, number>();
  const sockets: Socket[] = [];
  let connections = 0;
  const server: Server = createServer((client) => {
    connections += 1;
    const upstream = connect(target, '127.0.0.1');
    sockets.push(client, upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      let dropped = false;
      for (const marker of new Set([...drops.keys(), ...seen.keys()])) {
        if (!text.includes(marker)) continue;
        seen.set(marker, (seen.get(marker) ?? 0) + 1);
        const left = drops.get(marker) ?? 0;
        if (left > 0) {
          drops.set(marker, left - 1);
          dropped = true;
        }
      }
      if (dropped) end();
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    drop: (marker, times) => {
      drops.set(marker, times);
      if (!seen.has(marker)) seen.set(marker, 0);
    },
    seen: (marker) => seen.get(marker) ?? 0,
    get connections() {
      return connections;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What the tests close a client with: node-redis 5+ `destroy()`, ioredis and node-redis 4 `disconnect()`. */
interface Closable {
  destroy?(): unknown;
  disconnect(): unknown;
  on(event: 'error', listener: () => void): unknown;
}
type CreateClient = (options: { socket: { host: string; port: number } }) => {
  connect(): Promise<unknown>;
};

/**
 * A client of each major the peer ranges name (ioredis 5 and 6, node-redis 4, 5 and 6), made on
 * `port` and connected; each is closed by a closer pushed to `closers` (run them in afterAll).
 */
export function clientMajors(
  closers: (() => Promise<unknown> | unknown)[],
): Record<string, (port: number) => Promise<RedisConnection>> {
  const made = (client: Closable): RedisConnection => {
    client.on('error', () => undefined); // a proxy closed under it: reconnect attempts, not test failures
    closers.push(() => (typeof client.destroy === 'function' ? client.destroy() : client.disconnect()));
    return client as unknown as RedisConnection;
  };
  const nodeRedisOf = (create: CreateClient) => async (port: number) => {
    const client = create({ socket: { host: '127.0.0.1', port } });
    await client.connect();
    return made(client as unknown as Closable);
  };
  return {
    'ioredis 5': async (port) => made(new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 })),
    'ioredis 6': async (port) => made(new Redis6({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 })),
    'node-redis 4': nodeRedisOf(createClient4 as CreateClient),
    'node-redis 5': nodeRedisOf(createClient as CreateClient),
    'node-redis 6': nodeRedisOf(createClient6 as CreateClient),
  };
}
