import { connect, createServer, type Server, type Socket } from 'node:net';
import { sleep } from '../clock/clock.js';
import type { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { isThrottled } from '../errors/guards.js';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (a database, Redis) that can be taken down and
 * brought back: `down` resets every connection as it arrives (a server that is gone, its connections
 * refused or reset), `up` pipes them through. Counts the connections it was asked for: what a refused
 * call must not add to. Used by the throttle tests of the stores (issue 23).
 */
export interface SwitchProxy {
  readonly port: number;
  /** Connections made to the proxy so far, up or down. */
  readonly connections: number;
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export async function switchProxy(target: number, state: 'up' | 'down' = 'up'): Promise<SwitchProxy> {
  let mode = state;
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    connections += 1;
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (mode === 'down') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target, '127.0.0.1');
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    client.pipe(upstream);
    upstream.pipe(client);
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
    get connections() {
      return connections;
    },
    down: () => {
      mode = 'down';
      for (const s of sockets) s.destroy(); // the connections it had are gone with it
    },
    up: () => {
      mode = 'up';
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One call's outcome in a throttle test. */
export interface Outcome {
  ok: boolean;
  refused: boolean;
  error?: unknown;
}

/**
 * Runs `call` to its end while the fake clock moves 1 ms per real ms (a real socket answers in real
 * time, timers armed on the fake clock fire in fake time), then pads the step to `stepMs` of fake time.
 */
export async function settle(clock: FakeClock, call: () => Promise<unknown>, stepMs = 5): Promise<Outcome> {
  const start = clock.now();
  let outcome: Outcome | undefined;
  call().then(
    () => {
      outcome = { ok: true, refused: false };
    },
    (error: unknown) => {
      outcome = { ok: false, refused: isThrottled(error), error };
    },
  );
  await Promise.resolve();
  while (outcome === undefined) {
    await clock.advanceAsync(1);
    await sleep(systemClock, 1);
  }
  const spent = clock.now() - start;
  if (spent < stepMs) await clock.advanceAsync(stepMs - spent);
  return outcome;
}

/**
 * Steps `call` until ≥ 99% of the last `window` calls succeeded; returns the fake time that took
 * from the first step, or undefined after `max` steps.
 */
export async function recovery(
  clock: FakeClock,
  call: () => Promise<unknown>,
  window = 200,
  max = 2_000,
): Promise<number | undefined> {
  const start = clock.now();
  const recent: boolean[] = [];
  for (let i = 0; i < max; i += 1) {
    recent.push((await settle(clock, call)).ok);
    if (recent.length > window) recent.shift();
    if (recent.length === window && recent.filter(Boolean).length >= Math.ceil(window * 0.99))
      return clock.now() - start;
  }
  return undefined;
}
