import { Client, type Dispatcher, Pool } from 'undici';

/**
 * The client's connection pool: undici's `Pool`, with every client it creates tracked, so that
 * `connections` holds and `close()`/`destroy()` reach every socket.
 *
 * Why: when a connect fails (timeout, refused, slow DNS), undici 7's Pool drops that client from its
 * list without closing it, and the dropped client keeps the pool's `drain` listener: when its own
 * request fails, it drains requests queued in the pool into itself, connects again and keeps that
 * socket, outside the list the pool counts against `connections` and closes. Measured at the server
 * with `connections: 2` and one slow lookup in three: 15 sockets open at once, 13 left after
 * `close()`. Here a dropped client loses the pool's `drain` listener at once (nothing more is
 * drained into it) and is closed (its own requests finish first); `close()` and `destroy()` end
 * every client ever created, dropped ones included.
 */
export interface TrackedPool {
  readonly dispatcher: Dispatcher;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

type PoolOptions = ConstructorParameters<typeof Pool>[1];

export function createTrackedPool(origin: string, options: PoolOptions): TrackedPool {
  const clients = new Set<Dispatcher>();
  const forget = (client: Dispatcher): void => void clients.delete(client);
  const pool = new Pool(origin, {
    ...options,
    factory: (url, clientOptions) => {
      const client = new Client(url, clientOptions as Client.Options);
      clients.add(client);
      return client;
    },
  });
  pool.on('connectionError', (_origin, targets) => {
    for (const target of targets) {
      if (target === pool || !clients.has(target)) continue;
      target.removeAllListeners('drain');
      target.close().then(
        () => forget(target),
        () => forget(target),
      );
    }
  });
  const all = async (end: (client: Dispatcher) => Promise<void>): Promise<void> => {
    await Promise.all(
      [...clients].map((client) =>
        (client as { destroyed?: boolean }).destroyed ? undefined : end(client).catch(() => {}),
      ),
    );
    clients.clear();
  };
  return {
    dispatcher: pool,
    close: async () => {
      await pool.close();
      await all((client) => client.close());
    },
    destroy: async () => {
      await pool.destroy();
      await all((client) => client.destroy());
    },
  };
}
