/**
 * `prazo/redis`: Redis commands bounded by the deadline over `ioredis` or `redis` (node-redis), with
 * blocking commands given a server-side timeout that ends before it and no connection reused while
 * a late reply is due (SPEC D4, D7). Both clients are optional peers: nothing of them is imported.
 *
 * @module prazo/redis
 */
export {
  REDIS_CLIENT_OPTIONS,
  REDIS_COMMAND_OPTIONS,
  type RedisArg,
  type RedisClientOptions,
  type RedisCommandOptions,
  type RedisConnection,
  type RedisDeadlineClient,
  type RedisStoreEntry,
  redisDeadlineClient,
  redisOptionsFrom,
} from './client.js';
