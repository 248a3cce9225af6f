import { Client, type Dispatcher, errors, Pool } from 'undici';

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
 *
 * And when the dropped client was the pool's last: undici's Pool drains the requests queued in it
 * (every client busy when they came) only into a client of its list that says `drain`, and adds a
 * client only when a request is dispatched. With none left, a queued request waited for the next
 * dispatch (without one: its attempt timeout, QUEUE_TIMEOUT, though the pool had room), and
 * `pool.close()`, which waits for the queue to empty, for ever. Here the pool is asked for a client
 * then (its own `get dispatcher` step: one created under `connections`, and the queue drained into it
 * as undici drains into every client it adds). Where a Pool has no such step (another undici), the
 * queue waits for the next dispatch as before.
 */
export interface TrackedPool {
  readonly dispatcher: Dispatcher;
  close(): Promise<void>;
  destroy(): Promise<void>;
}

type PoolOptions = ConstructorParameters<typeof Pool>[1];

/** undici's Pool step that returns a free client, creating one under `connections` (undici 7 and 8). */
const getDispatcher = Object.getOwnPropertySymbols(Pool.prototype).find(
  (symbol) => symbol.description === 'get dispatcher',
);

/** Has `pool` give its queue a client, if it has requests queued and knows how. */
function unstrand(pool: Pool): void {
  if (getDispatcher === undefined || pool.destroyed) return; // closing: its queue still finishes
  const step = (pool as unknown as Record<symbol, unknown>)[getDispatcher];
  if (typeof step !== 'function' || pool.stats.queued === 0) return;
  try {
    step.call(pool);
  } catch {
    // The pool is ending, or not the Pool this was written against: the queue waits as before.
  }
}

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
    unstrand(pool);
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

/**
 * undici's own error for a call on a closed or destroyed dispatcher (`UND_ERR_CLOSED`,
 * `UND_ERR_DESTROYED`): what a client of prazo's, or its instances, answer once closed, as undici's
 * pool would. The executor reads either as the caller's lifecycle, never the dependency's failure.
 */
export function endedError(ended: 'closed' | 'destroyed'): Error {
  return ended === 'closed' ? new errors.ClientClosedError() : new errors.ClientDestroyedError();
}
