/**
 * `prazo/pg`: PostgreSQL queries and transactions that stop on the server when the deadline passes
 * (SPEC D4, D7). `pg` is an optional peer: only its types are imported.
 *
 * @module prazo/pg
 */

export { createPgEvents, type PgEvents } from './events.js';
export { isQueryCanceled } from './guard.js';
export { pgDeadlineKnex } from './knex.js';
export { PG_DEADLINE_OPTIONS, type PgDeadlineOptions } from './options.js';
export { PG_POOL_OPTIONS, type PgPoolOptions, type PgThrottled, pgDeadlinePool } from './pool.js';
export { queryWithDeadline } from './query.js';
export { type PgTransaction, transactionWithDeadline } from './transaction.js';
export type { PgClient, PgPool, PgPoolClient } from './types.js';
