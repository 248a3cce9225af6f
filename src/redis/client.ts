import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { assertFits } from '../deadline/fits.js';
import type { Dependency } from '../dependency/dependency.js';
import { type DependencyListener, Listeners } from '../dependency/events.js';
import { besideDependency, dependencyOption, executorOf } from '../dependency/transport.js';
import type { DependencyEvent, Disposable } from '../dependency/types.js';
import { ClientClosedError } from '../errors/closed.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import { throttleFrom } from '../throttle/throttle.js';
import {
  answered,
  exec,
  inTransaction,
  one,
  REDIS_COMMAND_OPTIONS,
  type RedisArg,
  type RedisCommand,
  type RedisCommandOptions,
  readCommands,
  serverAnswered,
  single,
} from './commands.js';
import { Connections, isConnection, type RedisConnection, type Slot } from './connections.js';
import { exchangeThrough } from './executor.js';
import { type Defaults, type RedisSession, runSession } from './session.js';

export {
  REDIS_COMMAND_OPTIONS,
  type RedisArg,
  type RedisCommand,
  type RedisCommandOptions,
  type RedisConnection,
  type RedisSession,
  serverAnswered,
};

/** Options of {@link redisDeadlineClient}, declared once, validated when it is built. */
export const REDIS_CLIENT_OPTIONS = defineOptions(
  {
    /** The dependency's name in errors and events. Default 'redis'. */
    name: option.string({ default: 'redis' }),
    /**
     * A command's expected p99, in ms: with less time left it is not sent and fails with
     * DeadlineInsufficientError (SPEC D4). Default 0; [0, 2^31-1].
     */
    p99Ms: option.number({ default: 0, unit: 'ms', min: 0, max: MAX_TIMER_DELAY_MS }),
    /**
     * How much earlier than the deadline a blocking command's server-side block is set to end, in ms.
     * Redis checks block timeouts at its `hz` (10 times a second by default), so a block ends up to
     * 100 ms after its timeout, then its reply travels back: the default covers both. Default 100;
     * [0, 10000].
     */
    blockMarginMs: option.number({ default: 100, unit: 'ms', min: 0, max: 10_000 }),
    /**
     * Grace past the deadline before the client stops waiting for a reply, in ms; the connection is
     * then set aside until that late reply has come. Default 50; [0, 60000].
     */
    cancelGraceMs: option.number({ default: 50, unit: 'ms', min: 0, max: 60_000 }),
    /**
     * The most connections prazo keeps: the given client plus duplicates opened while others await a
     * late reply. Default 3; [1, 64].
     */
    maxConnections: option.integer({ default: 3, min: 1, max: 64 }),
    /**
     * Adaptive throttling of the client's commands (docs/throttling.md, the executor's own
     * `AdaptiveThrottle` and options): once most recent exchanges go unanswered (not connected by the
     * deadline, no reply by it, a reset connection, the server LOADING, BUSY, OOM, MASTERDOWN or out
     * of clients), a command, transaction, pipeline or session is refused locally with probability
     * max(0, (requests − k × accepts) / (requests + 1)), at most `maxProbability`: THROTTLED at once,
     * nothing written, no connection taken. A reply, a command's own error included, is an answer.
     * `false` switches it off. Default on (`true`): k 2, a 1 s window, at most 90% refused, nothing
     * refused under 10 requests in the window.
     */
    throttle: option.toggle(THROTTLE_OPTIONS),
    /** Uniform [0, 1) numbers for the throttle's spreading. Default `Math.random`; inject one for deterministic tests. */
    random: option.fn<RandomSource>(),
    /** Where time comes from. Default: the system clock. */
    clock: option.clock(),
    /**
     * Runs each exchange (a command, a transaction, a pipeline, a session's command) as a call of this
     * executor (made with `createDependency`), as prazo/connect's calls are: it resolves the deadline
     * (the command's, never past the ambient one, else its `defaultDeadlineMs`) and owns D4 with its
     * p99, its throttle, its concurrency limit (a command may wait in its queue), its retry plan and
     * budget (a command that only reads may be retried after a connection failure and hedged; a write
     * is sent once), its latency recorder, its events and traces. The client keeps the connections,
     * the blocking commands' server-side block (ending `blockMarginMs` before the attempt's end) and
     * the setting aside of a connection whose reply is late. Exclusive with `p99Ms`, `throttle`,
     * `random` and `cancelGraceMs` (the attempt's end is the executor's); `name` and `clock`, if
     * given, must be the executor's. Default: none (the client's own thin path).
     */
    dependency: dependencyOption<Dependency>(),
  },
  (values, report, context) => {
    besideDependency(['p99Ms', 'throttle', 'random'])(values, report, context);
    const { given, valid } = context;
    if (given.dependency !== undefined && valid('dependency') && given.cancelGraceMs !== undefined)
      report(
        'cancelGraceMs',
        "has no use beside `dependency`: the executor's attempt ends the wait for a reply (its timeout)",
      );
  },
);

export type RedisClientOptions = OptionsOf<typeof REDIS_CLIENT_OPTIONS>;

/** What {@link redisDeadlineClient} returns. */
export interface RedisDeadlineClient {
  /**
   * Sends one command under the ambient or given deadline and resolves with the client's reply
   * (`command('BLPOP', ['jobs', 10])`). Blocking commands get a server-side block ending before the
   * deadline (a nil reply then: nothing arrived in time). Commands that change their connection's
   * state (MULTI, EXEC, DISCARD, WATCH, UNWATCH, SELECT, SUBSCRIBE…, MONITOR, RESET, QUIT, HELLO,
   * AUTH, READONLY, READWRITE, CLIENT REPLY/TRACKING) are refused with a TypeError before anything
   * is sent: use {@link RedisDeadlineClient.transaction} or {@link RedisDeadlineClient.session}.
   */
  command<T = unknown>(name: string, args?: readonly RedisArg[], options?: RedisCommandOptions): Promise<T>;
  /**
   * `MULTI`, the commands and `EXEC` written together on one connection, so that nothing of anyone
   * else's comes between them, under one deadline; resolves with EXEC's reply as the client gives
   * it (one reply per command, a command's own runtime error in its place), rejects with EXEC's
   * error (EXECABORT when a command was refused as it was queued). Late: DEADLINE_EXCEEDED with
   * `outcome: 'unknown'` (EXEC may have run), its connection set aside like a command's.
   */
  transaction<T extends unknown[] = unknown[]>(
    commands: readonly RedisCommand[],
    options?: RedisCommandOptions,
  ): Promise<T>;
  /**
   * The commands written together on one connection, in order, under one deadline; resolves once
   * every reply has come, with each one's outcome (`PromiseSettledResult`: a command's error does
   * not hide the others' replies). Not atomic: use `transaction` for that.
   */
  pipeline(
    commands: readonly RedisCommand[],
    options?: RedisCommandOptions,
  ): Promise<PromiseSettledResult<unknown>[]>;
  /**
   * One connection held for `fn`'s whole sequence: every command of the {@link RedisSession} goes
   * to it, in order, and no one else's does (other calls take another connection, or wait for one
   * no longer than their deadline). `WATCH`, `MULTI`, `EXEC`, `DISCARD` and `UNWATCH` are allowed
   * there. When `fn` settles, a MULTI left open is discarded (`DISCARD`) and keys left watched are
   * unwatched before the connection serves anyone else. `options` are the default of its commands.
   */
  session<T>(fn: (session: RedisSession) => Promise<T>, options?: RedisCommandOptions): Promise<T>;
  /** How many connections await a late reply right now (set aside, not used). */
  readonly stuck: number;
  /** The dependency's name (the `name` option; with `dependency`, the dependency's). */
  readonly name: string;
  /**
   * The executor's events for each command (attempt; its end: success, error, timeout in phase
   * `deadline` — or `connect` when never sent — or cancelled; deadline-insufficient), so
   * `instrumentPrazo().addDependency(client)` counts Redis as it counts any dependency. With
   * `dependency`: that dependency's listeners (every event it emits, its own and other callers').
   */
  on(listener: DependencyListener): Disposable;
  /**
   * Where the adaptive throttle stands (docs/throttling.md), or undefined when it is switched off: the
   * exchanges counted in its window (refused ones included), those answered, and the probability a
   * new command is refused with now. With `dependency`: that dependency's throttle.
   */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
  /**
   * Closes the duplicates prazo opened (after their pending replies); the given client stays yours.
   * From then on every call — and a call still waiting for a connection — rejects with
   * ClientClosedError (`CLIENT_CLOSED`), nothing sent.
   */
  close(): Promise<void>;
}

/**
 * Redis commands bounded by the deadline (SPEC D4, D7) over an `ioredis` or `redis` client.
 *
 * With `dependency` (an executor made by `createDependency`), each exchange is one call of that
 * executor (src/redis/executor.ts): it owns D4 with its p99, its throttle, its concurrency limit, the
 * retry plan (reads only), the recorder, events and traces; the client keeps the connections, the
 * blocking commands' server-side block and the setting aside of late replies, inside each attempt.
 * Without it, the client keeps a thin path of its own:
 * - with less than `p99Ms` left a command is not sent (DeadlineInsufficientError);
 * - a connection that is not ready is waited for no longer than the deadline (one shared wait per
 *   connection, however many commands wait), and a command is never left in a client's offline
 *   queue to be written after its deadline;
 * - each command is bounded by the time left, per call (not a client-wide constant);
 * - blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN/MAX, BLMPOP, BZMPOP, XREAD/XREADGROUP BLOCK,
 *   WAIT, WAITAOF) get a server-side timeout ending `blockMarginMs` before the deadline;
 * - a command whose reply has not come `cancelGraceMs` after the deadline rejects with
 *   DeadlineExceededError, `outcome: 'unknown'` (a write may have been applied: never retry it
 *   blindly), and its connection is set aside until that late reply arrives: the next command goes
 *   to another connection (a duplicate of the client), so no command ever queues behind a reply that
 *   may take seconds, and no late reply can be read as another command's answer;
 * - commands go to the connection in use until it is set aside, then to the next one, which stays in
 *   use (a caller's pipeline in one tick lands on one connection); a transaction and a pipeline are
 *   written together on one connection, and a caller's sequence that needs one connection (WATCH,
 *   MULTI…EXEC) holds one of its own in a session, reset before anyone else gets it (#24).
 */
export function redisDeadlineClient(
  client: RedisConnection,
  options: RedisClientOptions = {},
): RedisDeadlineClient {
  const o = readOptions('redisDeadlineClient', REDIS_CLIENT_OPTIONS, options);
  if (!isConnection(client)) {
    throw new TypeError(
      'redisDeadlineClient: expected an ioredis or node-redis client (call/sendCommand, duplicate)',
    );
  }
  const through = o.dependency;
  const name = through?.name ?? o.name;
  const clock: Clock = through === undefined ? (o.clock ?? systemClock) : executorOf(through)!.plan.clock;
  const connections = new Connections(client, o.maxConnections, o.blockMarginMs, clock, name);
  const listeners = new Listeners();
  const emit = (make: () => DependencyEvent): void => {
    if (listeners.active) listeners.emit(make());
  };
  const ATTEMPT = { dependency: name, kind: 'original', attempt: 1 } as const;
  let closed = false;

  // One throttle per client: one Redis (or its proxy) is one dependency. Through an executor, its own.
  const throttle = through === undefined ? throttleFrom(o.throttle, clock, o.random) : undefined;
  /** Admits an exchange or a session, or fails it at once: nothing written, no connection taken. */
  const admit = (): void => {
    if (throttle === undefined) return;
    const now = clock.now();
    if (throttle.admit(now)) return;
    const refusal = throttle.refusal(name, now);
    const { requests, accepts, probability } = refusal;
    emit(() => ({ type: 'throttled', dependency: name, requests, accepts, probability }));
    throw refusal;
  };

  const fits = (deadline: Deadline | undefined): void => {
    if (deadline === undefined) return;
    assertFits(o, deadline.remainingMs(), (remainingMs) =>
      emit(() => ({
        type: 'deadline-insufficient',
        dependency: name,
        remainingMs,
        neededMs: o.p99Ms,
        attempt: 1,
      })),
    );
  };

  /**
   * One exchange with the server — one command, a transaction's or a pipeline's commands written
   * together — with its checks and events; `finish` reads the replies (and throws a command's error).
   */
  const run = async <T>(
    context: string,
    commands: readonly RedisCommand[],
    callOptions: RedisCommandOptions,
    held: Slot | undefined,
    defaults: Defaults | undefined,
    finish: (replies: PromiseSettledResult<unknown>[]) => T,
  ): Promise<T> => {
    const c = readOptions(context, REDIS_COMMAND_OPTIONS, callOptions);
    if (closed) throw new ClientClosedError({ dependency: name });
    const signal = c.signal ?? defaults?.signal;
    if (through !== undefined) {
      // The executor reads the ambient deadline itself (and caps the given one by it).
      const deadline = c.deadline ?? defaults?.deadline;
      return finish(await exchangeThrough(through, connections, commands, held, deadline, signal));
    }
    const deadline = c.deadline ?? defaults?.deadline ?? currentDeadline();
    if (signal?.aborted) throw signal.reason;
    fits(deadline);
    // A session's commands were admitted with it: never refused halfway through its sequence.
    if (held === undefined) admit();
    const started = clock.now();
    emit(() => ({ type: 'attempt', ...ATTEMPT }));
    const ended = (
      outcome: 'success' | 'error' | 'timeout' | 'cancelled',
      error?: unknown,
      phase?: 'connect' | 'deadline',
    ): void =>
      emit(() => ({
        type: 'attempt-end',
        ...ATTEMPT,
        latencyMs: clock.now() - started,
        outcome,
        ...(phase === undefined ? {} : { phase }),
        ...(error === undefined ? {} : { error }),
      }));
    let counted = false;
    try {
      const bounds = { deadline, timed: true, graceMs: o.cancelGraceMs, signal };
      const replies = await connections.exchange(commands, held, bounds);
      counted = true;
      if (throttle !== undefined) throttle.count(clock.now(), answered(replies));
      const reply = finish(replies);
      ended('success');
      return reply;
    } catch (error) {
      // Counted when the outcome is known; the caller's own abort says nothing of the server.
      if (!counted && throttle !== undefined && !(signal?.aborted && error === signal.reason))
        throttle.count(clock.now(), serverAnswered(error));
      if (signal?.aborted && error === signal.reason) ended('cancelled', error);
      else if (error instanceof DeadlineExceededError)
        ended('timeout', error, error.outcome === 'unknown' ? 'deadline' : 'connect');
      else ended('error', error);
      throw error;
    }
  };

  const session = async <T>(
    fn: (session: RedisSession) => Promise<T>,
    sessionOptions: RedisCommandOptions = {},
  ): Promise<T> => {
    const s = readOptions('RedisDeadlineClient.session', REDIS_COMMAND_OPTIONS, sessionOptions);
    if (closed) throw new ClientClosedError({ dependency: name });
    if (typeof fn !== 'function') throw new TypeError('session(fn): fn must be a function');
    const defaults: Defaults = { deadline: s.deadline ?? currentDeadline(), signal: s.signal };
    if (defaults.signal?.aborted) throw defaults.signal.reason;
    if (through === undefined) {
      fits(defaults.deadline);
      admit(); // the session is admitted once, at its start: a refused one holds no connection
    }
    return runSession(connections, fn, defaults, run);
  };

  return {
    command: async <R>(commandName: string, args: readonly RedisArg[] = [], callOptions = {}) =>
      run(
        'RedisDeadlineClient.command',
        single(commandName, args, 'shared'),
        callOptions,
        undefined,
        undefined,
        one<R>,
      ),
    transaction: async <R extends unknown[]>(commands: readonly RedisCommand[], callOptions = {}) =>
      run(
        'RedisDeadlineClient.transaction',
        inTransaction(commands, 'RedisDeadlineClient.transaction'),
        callOptions,
        undefined,
        undefined,
        exec<R>,
      ),
    pipeline: async (commands, callOptions = {}) =>
      run(
        'RedisDeadlineClient.pipeline',
        readCommands(commands, 'shared', 'RedisDeadlineClient.pipeline'),
        callOptions,
        undefined,
        undefined,
        (replies) => replies,
      ),
    session,
    name,
    on: (listener) => (through === undefined ? listeners.add(listener) : through.on(listener)),
    throttling: () => (through === undefined ? throttle?.state(clock.now()) : through.throttling()),
    get stuck() {
      return connections.stuck;
    },
    async close() {
      closed = true;
      await connections.close();
    },
  };
}

/** What {@link redisOptionsFrom} reads of a `prazo.config.yaml` entry (`loadConfig`'s `DependencyConfig`). */
export interface RedisStoreEntry {
  readonly options: {
    readonly name?: string;
    readonly p99Ms?: number;
    /** The entry's `throttle:` (the executor's declaration): the client's throttle too. */
    readonly throttle?: RedisClientOptions['throttle'];
  };
  readonly store?: {
    readonly kind: string;
    readonly cancelGraceMs?: number;
    readonly blockMarginMs?: number;
  };
}

/**
 * The options of {@link redisDeadlineClient} from a `prazo.config.yaml` dependency with
 * `store: { kind: redis }`: its name, its p99 (given or measured), its `throttle`, the store's grace
 * and block margin.
 */
export function redisOptionsFrom(entry: RedisStoreEntry): RedisClientOptions {
  if (entry.store?.kind !== 'redis') {
    throw new TypeError(
      `redisOptionsFrom: dependency ${JSON.stringify(entry.options.name)} is not a Redis store ` +
        `(store.kind ${JSON.stringify(entry.store?.kind)}; expected redis)`,
    );
  }
  const { cancelGraceMs, blockMarginMs } = entry.store;
  return {
    ...(entry.options.name === undefined ? {} : { name: entry.options.name }),
    ...(entry.options.p99Ms === undefined ? {} : { p99Ms: entry.options.p99Ms }),
    ...(cancelGraceMs === undefined ? {} : { cancelGraceMs }),
    ...(blockMarginMs === undefined ? {} : { blockMarginMs }),
    ...(entry.options.throttle === undefined ? {} : { throttle: entry.options.throttle }),
  };
}
