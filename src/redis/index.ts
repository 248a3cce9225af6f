/**
 * `prazo/redis`: Redis commands bounded by the deadline over `ioredis` or `redis` (node-redis), with
 * blocking commands given a server-side timeout that ends before it and no connection reused while
 * a late reply is due (SPEC D4, D7); transactions and pipelines written together on one connection,
 * a caller's sequence (WATCH…EXEC) on a connection held for it. With `dependency`, each exchange runs
 * as a call of that executor (its D4, throttle, concurrency limit, retries of reads, recorder, events
 * and traces). Both clients are optional peers: nothing of them is imported.
 *
 * @module prazo/redis
 */

export { type ClientClosedDetails, ClientClosedError } from '../errors/closed.js';
export { isClientClosed } from '../errors/guards.js';
export {
  REDIS_CLIENT_OPTIONS,
  type RedisClientOptions,
  type RedisDeadlineClient,
  type RedisStoreEntry,
  redisDeadlineClient,
  redisOptionsFrom,
} from './client.js';
export {
  REDIS_COMMAND_OPTIONS,
  type RedisArg,
  type RedisCommand,
  type RedisCommandOptions,
} from './commands.js';
export type { RedisConnection } from './connections.js';
export type { RedisSession } from './session.js';
