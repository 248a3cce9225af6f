/**
 * `prazo/pg`: PostgreSQL queries and transactions that stop on the server when the deadline passes
 * (SPEC D4, D7). `pg` is an optional peer: only its types are imported.
 */
export { sendCancelRequest } from './cancel.js';
export { PG_DEFAULTS, QUERY_CANCELED } from './constants.js';
export { isQueryCanceled } from './guard.js';
export type { PgDeadlineOptions } from './options.js';
export { queryWithDeadline } from './query.js';
export { statementTimeoutMs } from './session.js';
export { type PgTransaction, transactionWithDeadline } from './transaction.js';
export type { PgClient, PgPool, PgPoolClient } from './types.js';
