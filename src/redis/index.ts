/**
 * `prazo/redis`: Redis commands bounded by the deadline over `ioredis` or `redis` (node-redis), with
 * blocking commands given a server-side timeout that ends before it and no connection reused while
 * a late reply is due (SPEC D4, D7); transactions and pipelines written together on one connection,
 * a caller's sequence (WATCH…EXEC) on a connection held for it. Both clients are optional peers:
 * nothing of them is imported.
 *
 * @module prazo/redis
 */

export {
  REDIS_CLIENT_OPTIONS,
  REDIS_COMMAND_OPTIONS,
  type RedisArg,
  type RedisClientOptions,
  type RedisCommand,
  type RedisCommandOptions,
  type RedisConnection,
  type RedisDeadlineClient,
  type RedisSession,
  type RedisStoreEntry,
  redisDeadlineClient,
  redisOptionsFrom,
} from './client.js';
