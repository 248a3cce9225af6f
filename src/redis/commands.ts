/**
 * What prazo/redis knows of a command and of a reply, whichever path sends it (its own thin one, or
 * an executor's): the shape of a command, the commands whose effect stays on their connection (and
 * where they are allowed), the commands that only read (which an executor may send more than once),
 * and whether an error reply is the server's answer or the server failing.
 */

import type { Deadline } from '../deadline/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';

/** One argument of a command. */
export type RedisArg = string | number | Buffer;

/** One command of a transaction or a pipeline: its name and its arguments. */
export type RedisCommand = readonly [name: string, args?: readonly RedisArg[]];

/** Options of one command, validated per call. */
export const REDIS_COMMAND_OPTIONS = defineOptions({
  /**
   * The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no limit (through
   * a `dependency`: its `defaultDeadlineMs`).
   */
  deadline: option.value<Deadline>('a Deadline', option.hasMethods('remainingMs', 'toHeaders')),
  /** The caller's own cancellation: the call rejects with its reason when it aborts. Default none. */
  signal: option.signal(),
});

export type RedisCommandOptions = OptionsOf<typeof REDIS_COMMAND_OPTIONS>;

/**
 * Commands whose effect stays on their connection. `command()` may go to another connection than
 * the previous call's (a connection with a late reply is set aside), so these would split a
 * caller's sequence across connections (a MULTI on one, its commands run outside it on another, the
 * first left inside MULTI swallowing the next callers' writes as QUEUED: #24) or leave a duplicate
 * unlike the client. The transaction's own are allowed in a session; the rest nowhere.
 */
const TRANSACTION_STATE = new Set(['multi', 'exec', 'discard', 'watch', 'unwatch']);
const CONNECTION_STATE = new Set([
  'select',
  'subscribe',
  'psubscribe',
  'ssubscribe',
  'unsubscribe',
  'punsubscribe',
  'sunsubscribe',
  'monitor',
  'reset',
  'quit',
  'hello',
  'auth',
  'readonly',
  'readwrite',
]);
const CLIENT_STATE = /^(reply|tracking)$/i;

/** Where a command may run: shared (`command`), a session's own, inside a MULTI…EXEC of prazo's. */
export type Place = 'shared' | 'session' | 'inside';

function refuseState(name: string, args: readonly RedisArg[], place: Place): void {
  const lower = name.toLowerCase();
  if (TRANSACTION_STATE.has(lower)) {
    if (place === 'session') return;
    throw new TypeError(
      place === 'inside'
        ? `redisDeadlineClient: ${name} inside transaction([...]): prazo writes MULTI and EXEC itself`
        : `redisDeadlineClient: ${name} through command() could run on another connection than the ` +
            "caller's other commands (each command takes a connection free of late replies): use " +
            'transaction([...]) for MULTI…EXEC written together, or session(fn) for a sequence on one ' +
            'connection (WATCH included)',
    );
  }
  if (
    CONNECTION_STATE.has(lower) ||
    (lower === 'client' && args.length > 0 && CLIENT_STATE.test(String(args[0])))
  ) {
    throw new TypeError(
      `redisDeadlineClient: ${name} changes its connection's state, which prazo's other connections ` +
        "would not share: set it in the client's own options (duplicates inherit them), or use a " +
        'client of its own',
    );
  }
}

/** The commands of a transaction or a pipeline, checked: a non-empty list of [name, args?]. */
export function readCommands(commands: readonly RedisCommand[], place: Place, what: string): RedisCommand[] {
  if (!Array.isArray(commands) || commands.length === 0)
    throw new TypeError(`${what}: a non-empty list of [name, args?] commands is required`);
  return commands.map((command) => {
    const [name, args = []] = Array.isArray(command) ? command : [];
    if (typeof name !== 'string' || name.length === 0 || !Array.isArray(args))
      throw new TypeError(`${what}: each command is [name, args?] with a non-empty name`);
    refuseState(name, args, place);
    return [name, args] as const;
  });
}

/** One command, checked, as the list an exchange writes. */
export function single(name: string, args: readonly RedisArg[], place: Place): RedisCommand[] {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('a command name is required');
  if (!Array.isArray(args)) throw new TypeError(`${name}: args must be an array`);
  refuseState(name, args, place);
  return [[name, args]];
}

/** A transaction's commands, checked, between the MULTI and the EXEC prazo writes. */
export function inTransaction(commands: readonly RedisCommand[], what: string): RedisCommand[] {
  return [['MULTI'], ...readCommands(commands, 'inside', what), ['EXEC']];
}

/** The reply of an exchange of one command (its error thrown). */
export function one<T>(replies: PromiseSettledResult<unknown>[]): T {
  const [reply] = replies;
  if (reply!.status === 'rejected') throw reply!.reason;
  return reply!.value as T;
}

/** The reply of a transaction: EXEC's. */
export function exec<T>(replies: PromiseSettledResult<unknown>[]): T {
  return one<T>(replies.slice(-1));
}

/**
 * Commands that only read, and that an executor may therefore send more than once (retried after a
 * connection failure, hedged): Redis's read-only commands less those that block (a retry would
 * block again), that are not deterministic in what they touch on the server (`PFCOUNT` may rewrite
 * its key's cache), or that are slow or administrative (`KEYS`, `OBJECT`, `DEBUG`…). Every other
 * command — any write, a script (`EVAL`, `FCALL`; their `_RO` forms are refused writes by the server,
 * so they are here), a blocking pop — is sent once. A list, not the server's `COMMAND INFO` flags:
 * fixed, reviewed, and the same whichever server version answers. Lower case.
 */
export const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set([
  // keys and the server
  'exists',
  'type',
  'ttl',
  'pttl',
  'expiretime',
  'pexpiretime',
  'dbsize',
  'scan',
  'ping',
  'echo',
  // strings and bits
  'get',
  'mget',
  'strlen',
  'getrange',
  'substr',
  'lcs',
  'getbit',
  'bitcount',
  'bitpos',
  'bitfield_ro',
  // hashes
  'hget',
  'hmget',
  'hgetall',
  'hkeys',
  'hvals',
  'hlen',
  'hexists',
  'hstrlen',
  'hscan',
  'hrandfield',
  // lists
  'lrange',
  'llen',
  'lindex',
  'lpos',
  // sets
  'smembers',
  'sismember',
  'smismember',
  'scard',
  'sinter',
  'sintercard',
  'sunion',
  'sdiff',
  'sscan',
  'srandmember',
  // sorted sets
  'zrange',
  'zrangebyscore',
  'zrevrange',
  'zrevrangebyscore',
  'zrangebylex',
  'zrevrangebylex',
  'zscore',
  'zmscore',
  'zrank',
  'zrevrank',
  'zcard',
  'zcount',
  'zlexcount',
  'zscan',
  'zrandmember',
  'zinter',
  'zunion',
  'zdiff',
  'zintercard',
  // streams (without XREAD: it may block)
  'xrange',
  'xrevrange',
  'xlen',
  // geo
  'geopos',
  'geodist',
  'geohash',
  'geosearch',
  'georadius_ro',
  'georadiusbymember_ro',
  // read-only scripts and sort: the server refuses a write in them
  'eval_ro',
  'evalsha_ro',
  'fcall_ro',
  'sort_ro',
]);

/**
 * Whether an exchange only reads: every command is in {@link READ_ONLY_COMMANDS} (the MULTI and EXEC
 * prazo writes around a transaction's reads change nothing).
 */
export function readsOnly(commands: readonly RedisCommand[]): boolean {
  return commands.every(([name]) => {
    const lower = name.toLowerCase();
    return READ_ONLY_COMMANDS.has(lower) || lower === 'multi' || lower === 'exec';
  });
}

/**
 * Replies that say the server cannot serve now (not its answer to the command): loading its data
 * set, a script or module blocking it, out of memory, a replica without its master, a cluster down,
 * a slot migrating; and a full server (`ERR max number of clients reached`).
 */
const UNAVAILABLE_REPLY =
  /^(LOADING|BUSY|OOM|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOREPLICAS)\b|max number of clients/;

/**
 * Whether `error` is the server's own answer (an error reply: ioredis' `ReplyError`, node-redis'
 * `ErrorReply`): the throttle counts it as accepted, as the executor counts a 4xx. A connection
 * failure, a reply that never came by the deadline, or a reply saying the server cannot serve now
 * is not.
 */
export function serverAnswered(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  let reply = false;
  for (
    let p = Object.getPrototypeOf(error);
    p !== null && p !== Error.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    const name = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (name === 'ReplyError' || name === 'ErrorReply') {
      reply = true;
      break;
    }
  }
  const message = (error as { message?: unknown }).message;
  return reply && !(typeof message === 'string' && UNAVAILABLE_REPLY.test(message));
}

/** Whether every reply of an exchange came, as a value or as the server's own error answer. */
export function answered(replies: readonly PromiseSettledResult<unknown>[]): boolean {
  return replies.every((r) => r.status === 'fulfilled' || serverAnswered(r.reason));
}
