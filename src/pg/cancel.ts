import { connect } from 'node:net';
import { CANCEL_REQUEST_CODE } from './constants.js';
import type { PgClient } from './types.js';

/**
 * Sends a PostgreSQL CancelRequest for whatever `client`'s backend is running: the server-side
 * cancellation of the wire protocol (what `pg_cancel_backend` does), on a short-lived connection
 * of its own. Closing the client's socket would not do: the server keeps running the statement.
 *
 * Best effort and fire-and-forget: a cancel that cannot be delivered (no key yet, server gone) is
 * dropped; the statement then still ends at its `statement_timeout`.
 */
export function sendCancelRequest(client: PgClient): void {
  const { processID, secretKey, host, port } = client;
  if (typeof processID !== 'number' || typeof secretKey !== 'number' || typeof port !== 'number') return;
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  const socket =
    host?.startsWith('/') === true ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host ?? 'localhost');
  socket.once('connect', () => socket.end(message));
  socket.once('error', () => socket.destroy());
  socket.unref();
}
