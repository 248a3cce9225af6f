import type { Deadline } from '../deadline/deadline.js';
import {
  exec,
  inTransaction,
  one,
  type RedisArg,
  type RedisCommand,
  type RedisCommandOptions,
  readCommands,
  single,
} from './commands.js';
import type { Connections, Slot } from './connections.js';

/**
 * `session(fn)`: one connection held for a caller's sequence (WATCH…MULTI…EXEC, #24). Every command
 * of the session goes to it, in order, and no one else's does; when `fn` settles what it left on the
 * server (an open MULTI, watched keys) is undone before the connection serves anyone else. Each
 * command is one exchange of the client's path (its own, or an executor's call): the session only
 * decides where it is written.
 */

/** The commands of one caller's sequence, on the one connection `RedisDeadlineClient.session` holds. */
export interface RedisSession {
  /** One command on the session's connection; WATCH, MULTI, EXEC, DISCARD and UNWATCH allowed. */
  command<T = unknown>(name: string, args?: readonly RedisArg[], options?: RedisCommandOptions): Promise<T>;
  /**
   * MULTI…EXEC written together on the session's connection (after its WATCH, if any): EXEC's reply,
   * or null when a watched key changed (nothing was applied).
   */
  transaction<T extends unknown[] = unknown[]>(
    commands: readonly RedisCommand[],
    options?: RedisCommandOptions,
  ): Promise<T | null>;
  /** The commands written together on the session's connection (see `RedisDeadlineClient.pipeline`). */
  pipeline(
    commands: readonly RedisCommand[],
    options?: RedisCommandOptions,
  ): Promise<PromiseSettledResult<unknown>[]>;
}

/** Defaults a session gives its commands. */
export interface Defaults {
  readonly deadline: Deadline | undefined;
  readonly signal: AbortSignal | undefined;
}

/** How the client runs one exchange (its checks, its path, its events); `finish` reads the replies. */
export type Run = <T>(
  context: string,
  commands: readonly RedisCommand[],
  callOptions: RedisCommandOptions,
  held: Slot | undefined,
  defaults: Defaults | undefined,
  finish: (replies: PromiseSettledResult<unknown>[]) => T,
) => Promise<T>;

/**
 * Runs `fn` with a connection held for it (waited for no longer than the session's deadline or
 * signal), released when `fn` settles, whatever it did.
 */
export async function runSession<T>(
  connections: Connections,
  fn: (session: RedisSession) => Promise<T>,
  defaults: Defaults,
  run: Run,
): Promise<T> {
  const slot = await connections.hold(defaults.deadline, defaults.signal);
  let open = true;
  const ensureOpen = (): void => {
    if (!open) throw new Error('redisDeadlineClient: the session has ended');
  };
  const handle: RedisSession = {
    command: async <R>(
      name: string,
      args: readonly RedisArg[] = [],
      callOptions: RedisCommandOptions = {},
    ) => {
      ensureOpen();
      const commands = single(name, args, 'session');
      return run('RedisSession.command', commands, callOptions, slot, defaults, one<R>);
    },
    transaction: async <R extends unknown[]>(commands: readonly RedisCommand[], callOptions = {}) => {
      ensureOpen();
      const all = inTransaction(commands, 'RedisSession.transaction');
      if (slot.inMulti)
        throw new TypeError('RedisSession.transaction: a MULTI is already open (EXEC or DISCARD it)');
      return run('RedisSession.transaction', all, callOptions, slot, defaults, exec<R | null>);
    },
    pipeline: async (commands, callOptions = {}) => {
      ensureOpen();
      const all = readCommands(commands, 'session', 'RedisSession.pipeline');
      return run('RedisSession.pipeline', all, callOptions, slot, defaults, (replies) => replies);
    },
  };
  try {
    return await fn(handle);
  } finally {
    open = false;
    connections.release(slot);
  }
}
