import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { assertFits } from '../deadline/fits.js';
import { armDeadlineTimer, type DeadlineTimer } from '../deadline/timer.js';
import { type DependencyListener, Listeners } from '../dependency/events.js';
import type { DependencyEvent, Disposable } from '../dependency/types.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import type { RandomSource } from '../retry/backoff.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { THROTTLE_OPTIONS } from '../throttle/options.js';
import { throttleFrom } from '../throttle/throttle.js';
import { boundBlocking, serverBlockMs } from './blocking.js';

/**
 * A Redis client of `ioredis` (5/6) or `redis` (node-redis 4/5/6), structurally: both are optional
 * peers, never imported. ioredis sends with `call`, node-redis with `sendCommand`; both `duplicate`.
 */
export interface RedisConnection {
  duplicate(...args: never[]): unknown;
  call?(...args: never[]): unknown;
  sendCommand?(...args: never[]): unknown;
}

/** One argument of a command. */
export type RedisArg = string | number | Buffer;

const isConnection = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  typeof (value as RedisConnection).duplicate === 'function' &&
  (typeof (value as RedisConnection).call === 'function' ||
    typeof (value as RedisConnection).sendCommand === 'function');

/** Options of {@link redisDeadlineClient}, declared once, validated when it is built. */
export const REDIS_CLIENT_OPTIONS = defineOptions({
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
});

export type RedisClientOptions = OptionsOf<typeof REDIS_CLIENT_OPTIONS>;

/** Options of one command, validated per call. */
export const REDIS_COMMAND_OPTIONS = defineOptions({
  /** The deadline to honour. Default: the ambient one (`currentDeadline()`); none → no limit. */
  deadline: option.value<Deadline>('a Deadline', option.hasMethods('remainingMs', 'toHeaders')),
  /** The caller's own cancellation: the call rejects with its reason when it aborts. Default none. */
  signal: option.signal(),
});

export type RedisCommandOptions = OptionsOf<typeof REDIS_COMMAND_OPTIONS>;

/** One command of a transaction or a pipeline: its name and its arguments. */
export type RedisCommand = readonly [name: string, args?: readonly RedisArg[]];

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
  /** The dependency's name (the `name` option). */
  readonly name: string;
  /**
   * The executor's events for each command (attempt; its end: success, error, timeout in phase
   * `deadline` — or `connect` when never sent — or cancelled; deadline-insufficient), so
   * `instrumentPrazo().addDependency(client)` counts Redis as it counts any dependency.
   */
  on(listener: DependencyListener): Disposable;
  /**
   * Where the adaptive throttle stands (docs/throttling.md), or undefined when it is switched off: the
   * exchanges counted in its window (refused ones included), those answered, and the probability a
   * new command is refused with now.
   */
  throttling():
    | { readonly requests: number; readonly accepts: number; readonly probability: number }
    | undefined;
  /** Closes the duplicates prazo opened (after their pending replies); the given client stays yours. */
  close(): Promise<void>;
}

/** The commands of one caller's sequence, on the one connection {@link RedisDeadlineClient.session} holds. */
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

interface Slot {
  readonly connection: RedisConnection;
  readonly owned: boolean;
  /** Replies still due for commands the caller stopped waiting for. */
  late: number;
  /** The one wait for this connection to be ready (its `connect()`, or one `ready` listener), shared. */
  ready: Promise<void> | undefined;
  /** Held by a session: no one else's command is written to it. */
  held: boolean;
  /** What the commands written to it leave on the server: an open MULTI, watched keys. */
  inMulti: boolean;
  watching: boolean;
}

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
type Place = 'shared' | 'session' | 'inside';

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
function readCommands(commands: readonly RedisCommand[], place: Place, what: string): RedisCommand[] {
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

/** The connection state a written command leaves (the server runs a connection's commands in order). */
function track(slot: Slot, name: string): void {
  switch (name.toLowerCase()) {
    case 'multi':
      slot.inMulti = true;
      break;
    case 'exec':
    case 'discard':
      slot.inMulti = false;
      slot.watching = false;
      break;
    case 'watch':
      if (!slot.inMulti) slot.watching = true;
      break;
    case 'unwatch':
      if (!slot.inMulti) slot.watching = false;
      break;
  }
}

/** Defaults a session gives its commands. */
interface Defaults {
  readonly deadline: Deadline | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * Redis commands bounded by the deadline (SPEC D4, D7) over an `ioredis` or `redis` client:
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
  const clock: Clock = o.clock ?? systemClock;
  const slots: Slot[] = [newSlot(client, false)];
  /** The connection shared commands go to, until it is set aside or held. */
  let current = slots[0]!;
  const waiters = new Set<() => void>();
  const listeners = new Listeners();
  const emit = (make: () => DependencyEvent): void => {
    if (listeners.active) listeners.emit(make());
  };
  const ATTEMPT = { dependency: o.name, kind: 'original', attempt: 1 } as const;
  let closed = false;

  const wake = (): void => {
    for (const w of [...waiters]) w();
  };
  const usable = (s: Slot): boolean => s.late === 0 && !s.held;
  const openSlot = (): Slot | undefined => {
    if (slots.length >= o.maxConnections) return undefined;
    const slot = openDuplicate(client);
    slots.push(slot);
    return slot;
  };
  /** The connection in use while it is free, else the next free one (or a new duplicate), kept. */
  const chooseShared = (): Slot | undefined => {
    if (usable(current)) return current;
    const next = slots.find(usable) ?? openSlot();
    if (next !== undefined) current = next;
    return next;
  };
  /** A connection for a session: one the shared commands do not use if there is one, then held. */
  const chooseHeld = (): Slot | undefined => {
    const slot =
      slots.find((s) => usable(s) && s !== current) ?? openSlot() ?? (usable(current) ? current : undefined);
    if (slot !== undefined) slot.held = true;
    return slot;
  };

  /** A connection from `choose`, or a wait for one no longer than the deadline (or the signal). */
  const take = (
    choose: () => Slot | undefined,
    deadline: Deadline | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Slot> => {
    const now = choose();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      let timer: DeadlineTimer | undefined;
      const done = (): void => {
        waiters.delete(waiter);
        timer?.clear();
        if (signal !== undefined) unsubscribeAbort(signal, onAbort);
      };
      const waiter = (): void => {
        const slot = choose();
        if (slot === undefined) return;
        done();
        resolve(slot);
      };
      const onAbort = (): void => {
        done();
        reject(signal?.reason);
      };
      waiters.add(waiter);
      if (signal !== undefined) subscribeAbort(signal, onAbort);
      if (deadline !== undefined) {
        // Re-armed a timer's range at a time: a deadline 30 days away is not cut at 24.8 days.
        timer = armDeadlineTimer(
          clock,
          () => deadline.remainingMs(),
          () => {
            done();
            reject(
              new DeadlineExceededError({
                dependency: `${o.name} (every connection awaits a late reply or is held by a session)`,
              }),
            );
          },
          { unref: true },
        );
      }
    });
  };

  // One throttle per client: one Redis (or its proxy) is one dependency.
  const throttle = throttleFrom(o.throttle, clock, o.random);
  /** Admits an exchange or a session, or fails it at once: nothing written, no connection taken. */
  const admit = (): void => {
    if (throttle === undefined) return;
    const now = clock.now();
    if (throttle.admit(now)) return;
    const refusal = throttle.refusal(o.name, now);
    const { requests, accepts, probability } = refusal;
    emit(() => ({ type: 'throttled', dependency: o.name, requests, accepts, probability }));
    throw refusal;
  };

  const fits = (deadline: Deadline | undefined): void => {
    if (deadline === undefined) return;
    assertFits(o, deadline.remainingMs(), (remainingMs) =>
      emit(() => ({
        type: 'deadline-insufficient',
        dependency: o.name,
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
    if (closed) throw new Error('redisDeadlineClient: closed');
    const deadline = c.deadline ?? defaults?.deadline ?? currentDeadline();
    const signal = c.signal ?? defaults?.signal;
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
      const replies = await attempt(commands, deadline, signal, held);
      counted = true;
      if (throttle !== undefined)
        throttle.count(
          clock.now(),
          replies.every((r) => r.status === 'fulfilled' || serverAnswered(r.reason)),
        );
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

  const attempt = async (
    commands: readonly RedisCommand[],
    deadline: Deadline | undefined,
    signal: AbortSignal | undefined,
    held: Slot | undefined,
  ): Promise<PromiseSettledResult<unknown>[]> => {
    const slot = held ?? (await take(chooseShared, deadline, signal));
    if (slot.ready !== undefined || !isReady(slot.connection)) {
      await bounded(whenReady(slot), deadline, signal, clock, () => notSent(o.name));
    }
    if (deadline === undefined) return Promise.allSettled(write(slot, commands, undefined));
    const remainingMs = deadline.remainingMs();
    if (remainingMs <= 0) throw notSent(o.name);
    const replies = Promise.allSettled(write(slot, commands, serverBlockMs(remainingMs, o.blockMarginMs)));
    const started = clock.now();
    const settled = (): void => {
      slot.late -= 1;
      if (slot.late === 0) wake();
    };
    const setAside = (): DeadlineExceededError => {
      slot.late += 1;
      replies.then(settled, settled);
      return new DeadlineExceededError({
        dependency: o.name,
        elapsedMs: clock.now() - started,
        deadlineEpochMs: deadline.epochMs(),
        outcome: 'unknown',
      });
    };
    return bounded(replies, deadline, signal, clock, setAside, o.cancelGraceMs);
  };

  /** Writes the commands to one connection in one go (nothing can come between), tracking its state. */
  const write = (
    slot: Slot,
    commands: readonly RedisCommand[],
    blockMs: number | undefined,
  ): Promise<unknown>[] =>
    commands.map(([name, args = []]) => {
      track(slot, name);
      const limited = blockMs === undefined ? args : boundBlocking(name, args, blockMs).args;
      return send(slot.connection, name, limited);
    });

  /** One wait per connection however many commands wait on it: one `ready` listener, not one each. */
  const whenReady = (slot: Slot): Promise<void> => {
    if (slot.ready === undefined) {
      if (isReady(slot.connection)) return Promise.resolve();
      slot.ready = readyOf(slot.connection);
    }
    const ready = slot.ready;
    const clear = (): void => {
      if (slot.ready === ready) slot.ready = undefined;
    };
    return ready.then(clear, (error: unknown) => {
      clear();
      throw error;
    });
  };

  const one = <T>(replies: PromiseSettledResult<unknown>[]): T => {
    const [reply] = replies;
    if (reply!.status === 'rejected') throw reply!.reason;
    return reply!.value as T;
  };
  const exec = <T>(replies: PromiseSettledResult<unknown>[]): T => one<T>(replies.slice(-1));
  const single = (name: string, args: readonly RedisArg[], place: Place): RedisCommand[] => {
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('a command name is required');
    if (!Array.isArray(args)) throw new TypeError(`${name}: args must be an array`);
    refuseState(name, args, place);
    return [[name, args]];
  };
  const inTransaction = (commands: readonly RedisCommand[], what: string): RedisCommand[] => [
    ['MULTI'],
    ...readCommands(commands, 'inside', what),
    ['EXEC'],
  ];

  const session = async <T>(
    fn: (session: RedisSession) => Promise<T>,
    sessionOptions: RedisCommandOptions = {},
  ): Promise<T> => {
    const s = readOptions('RedisDeadlineClient.session', REDIS_COMMAND_OPTIONS, sessionOptions);
    if (closed) throw new Error('redisDeadlineClient: closed');
    if (typeof fn !== 'function') throw new TypeError('session(fn): fn must be a function');
    const defaults: Defaults = { deadline: s.deadline ?? currentDeadline(), signal: s.signal };
    if (defaults.signal?.aborted) throw defaults.signal.reason;
    fits(defaults.deadline);
    admit(); // the session is admitted once, at its start: a refused one holds no connection
    const slot = await take(chooseHeld, defaults.deadline, defaults.signal);
    let open = true;
    const ensureOpen = (): void => {
      if (!open) throw new Error('redisDeadlineClient: the session has ended');
    };
    const handle: RedisSession = {
      command: async <R>(name: string, args: readonly RedisArg[] = [], callOptions = {}) => {
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
      release(slot);
    }
  };

  /**
   * A session's connection back to everyone, after what it left on the server is undone: written
   * now, so that it precedes whatever the next user writes (replies ignored: on a connection that
   * reconnected meanwhile there is nothing to undo, and the server says so).
   */
  const release = (slot: Slot): void => {
    const undo: RedisCommand[] = slot.inMulti ? [['DISCARD']] : slot.watching ? [['UNWATCH']] : [];
    for (const reply of write(slot, undo, undefined)) reply.catch(() => undefined);
    slot.inMulti = false;
    slot.watching = false;
    slot.held = false;
    wake();
  };

  return {
    command: async <R>(name: string, args: readonly RedisArg[] = [], callOptions = {}) =>
      run(
        'RedisDeadlineClient.command',
        single(name, args, 'shared'),
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
    name: o.name,
    on: (listener) => listeners.add(listener),
    throttling: () => throttle?.state(clock.now()),
    get stuck() {
      return slots.filter((s) => s.late > 0).length;
    },
    async close() {
      closed = true;
      await Promise.all(slots.filter((s) => s.owned).map((s) => closeGracefully(s.connection)));
    },
  };
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

function newSlot(connection: RedisConnection, owned: boolean): Slot {
  return { connection, owned, late: 0, ready: undefined, held: false, inMulti: false, watching: false };
}

function notSent(name: string): DeadlineExceededError {
  return new DeadlineExceededError({ dependency: `${name} (not connected)` });
}

/**
 * `work` raced against the deadline (+ `graceMs`) and the caller's signal; on the deadline, the
 * error `late()` makes (which also takes care of the reply still due). The work itself is never
 * cancelled: a command once written stays in its client's reply queue.
 */
function bounded<T>(
  work: Promise<T>,
  deadline: Deadline | undefined,
  signal: AbortSignal | undefined,
  clock: Clock,
  late: () => Error,
  graceMs = 0,
): Promise<T> {
  if (deadline === undefined && signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const finish = (then: () => void): void => {
      if (done) return;
      done = true;
      timer?.clear();
      if (signal !== undefined) unsubscribeAbort(signal, onAbort);
      then();
    };
    const onAbort = (): void =>
      finish(() => {
        late(); // the reply is still due all the same
        reject(signal?.reason);
      });
    // The deadline + grace, a timer's range at a time (a timer clamps at 24.8 days): a command under a
    // 30-day deadline is not failed early, and one under an endless deadline arms nothing.
    const timer =
      deadline === undefined
        ? undefined
        : armDeadlineTimer(
            clock,
            () => deadline.remainingMs() + graceMs,
            () => finish(() => reject(late())),
            { unref: true },
          );
    if (signal !== undefined) subscribeAbort(signal, onAbort);
    work.then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

type Method = (...args: unknown[]) => unknown;
const method = (target: object, name: string): Method | undefined => {
  const fn = (target as Record<string, unknown>)[name];
  return typeof fn === 'function' ? (fn as Method).bind(target) : undefined;
};

/** Sends one command: ioredis `call(name, ...args)`, node-redis `sendCommand([name, ...args])`. */
function send(connection: RedisConnection, name: string, args: readonly RedisArg[]): Promise<unknown> {
  const sendCommand = method(connection, 'sendCommand');
  const call = method(connection, 'call');
  try {
    if (call !== undefined) return Promise.resolve(call(name, ...args));
    return Promise.resolve(sendCommand!([name, ...args.map((a) => (typeof a === 'number' ? String(a) : a))]));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** ioredis: `status === 'ready'`; node-redis: `isReady`. */
function isReady(connection: RedisConnection): boolean {
  const c = connection as { status?: unknown; isReady?: unknown };
  if (typeof c.isReady === 'boolean') return c.isReady;
  return c.status === 'ready';
}

function readyOf(connection: RedisConnection): Promise<void> {
  if (isReady(connection)) return Promise.resolve();
  const once = method(connection, 'once');
  if (once === undefined) return Promise.resolve();
  return new Promise((resolve) => once('ready', () => resolve()));
}

/** A duplicate of the client, connecting (node-redis needs `connect()`; ioredis connects itself). */
function openDuplicate(client: RedisConnection): Slot {
  const connection = method(client, 'duplicate')!() as RedisConnection;
  const connect = method(connection, 'connect');
  const isNodeRedis = typeof (connection as { isOpen?: unknown }).isOpen === 'boolean';
  const lazy = (connection as { status?: unknown }).status === 'wait'; // ioredis with lazyConnect
  const slot = newSlot(connection, true);
  if ((isNodeRedis || lazy) && connect !== undefined) {
    slot.ready = Promise.resolve(connect()).then(() => undefined);
    slot.ready.catch(() => undefined);
  }
  return slot;
}

/** node-redis 5 `close()` / ioredis and node-redis 4 `quit()`: after the pending replies. */
async function closeGracefully(connection: RedisConnection): Promise<void> {
  const close = method(connection, 'close') ?? method(connection, 'quit');
  try {
    await close?.();
  } catch {
    method(connection, 'disconnect')?.();
  }
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
