import type { Clock, Timer } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { type DependencyListener, Listeners } from '../dependency/events.js';
import type { DependencyEvent, Disposable } from '../dependency/types.js';
import { DeadlineExceededError, DeadlineInsufficientError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
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

/** What {@link redisDeadlineClient} returns. */
export interface RedisDeadlineClient {
  /**
   * Sends one command under the ambient or given deadline and resolves with the client's reply
   * (`command('BLPOP', ['jobs', 10])`). Blocking commands get a server-side block ending before the
   * deadline (a nil reply then: nothing arrived in time).
   */
  command<T = unknown>(name: string, args?: readonly RedisArg[], options?: RedisCommandOptions): Promise<T>;
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
  /** Closes the duplicates prazo opened (after their pending replies); the given client stays yours. */
  close(): Promise<void>;
}

interface Slot {
  readonly connection: RedisConnection;
  readonly owned: boolean;
  /** Replies still due for commands the caller stopped waiting for. */
  late: number;
  ready: Promise<void> | undefined;
}

/**
 * Redis commands bounded by the deadline (SPEC D4, D7) over an `ioredis` or `redis` client:
 * - with less than `p99Ms` left a command is not sent (DeadlineInsufficientError);
 * - a connection that is not ready is waited for no longer than the deadline, and a command is never
 *   left in a client's offline queue to be written after its deadline;
 * - each command is bounded by the time left, per call (not a client-wide constant);
 * - blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN/MAX, BLMPOP, BZMPOP, XREAD/XREADGROUP BLOCK,
 *   WAIT, WAITAOF) get a server-side timeout ending `blockMarginMs` before the deadline;
 * - a command whose reply has not come `cancelGraceMs` after the deadline rejects with
 *   DeadlineExceededError, `outcome: 'unknown'` (a write may have been applied: never retry it
 *   blindly), and its connection is set aside until that late reply arrives: the next command goes
 *   to another connection (a duplicate of the client), so no command ever queues behind a reply that
 *   may take seconds, and no late reply can be read as another command's answer.
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
  const slots: Slot[] = [{ connection: client, owned: false, late: 0, ready: undefined }];
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

  /** A connection with no late reply due, opening a duplicate when all are set aside. */
  const pick = (deadline: Deadline | undefined): Promise<Slot> => {
    const free = slots.find((s) => s.late === 0);
    if (free !== undefined) return Promise.resolve(free);
    if (slots.length < o.maxConnections) {
      const slot = openDuplicate(client);
      slots.push(slot);
      return Promise.resolve(slot);
    }
    return new Promise((resolve, reject) => {
      let timer: Timer | undefined;
      const waiter = (): void => {
        const again = slots.find((s) => s.late === 0);
        if (again === undefined) return;
        waiters.delete(waiter);
        if (timer !== undefined) clock.clearTimer(timer);
        resolve(again);
      };
      waiters.add(waiter);
      if (deadline !== undefined) {
        timer = clock.setTimer(
          () => {
            waiters.delete(waiter);
            reject(
              new DeadlineExceededError({ dependency: `${o.name} (every connection awaits a late reply)` }),
            );
          },
          deadline.remainingMs(),
          { unref: true },
        );
      }
    });
  };

  const command = async <T>(
    name: string,
    args: readonly RedisArg[] = [],
    callOptions: RedisCommandOptions = {},
  ): Promise<T> => {
    const c = readOptions('RedisDeadlineClient.command', REDIS_COMMAND_OPTIONS, callOptions);
    if (closed) throw new Error('redisDeadlineClient: closed');
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('a command name is required');
    const deadline = c.deadline ?? currentDeadline();
    const { signal } = c;
    if (signal?.aborted) throw signal.reason;
    if (deadline !== undefined) {
      const remainingMs = deadline.remainingMs();
      if (remainingMs <= 0 || remainingMs < o.p99Ms) {
        const neededMs = o.p99Ms;
        emit(() => ({
          type: 'deadline-insufficient',
          dependency: o.name,
          remainingMs,
          neededMs,
          attempt: 1,
        }));
        throw new DeadlineInsufficientError({ dependency: o.name, remainingMs, neededMs });
      }
    }
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
    try {
      const reply = await attempt<T>(name, args, deadline, signal);
      ended('success');
      return reply;
    } catch (error) {
      if (signal?.aborted && error === signal.reason) ended('cancelled', error);
      else if (error instanceof DeadlineExceededError)
        ended('timeout', error, error.outcome === 'unknown' ? 'deadline' : 'connect');
      else ended('error', error);
      throw error;
    }
  };

  const attempt = async <T>(
    name: string,
    args: readonly RedisArg[],
    deadline: Deadline | undefined,
    signal: AbortSignal | undefined,
  ): Promise<T> => {
    const slot = await pick(deadline);
    if (slot.ready !== undefined || !isReady(slot.connection)) {
      await bounded(whenReady(slot), deadline, signal, clock, () => notSent(o.name));
    }
    if (deadline === undefined) return (await send(slot.connection, name, args)) as T;
    const remainingMs = deadline.remainingMs();
    if (remainingMs <= 0) throw notSent(o.name);
    const limited = boundBlocking(name, args, serverBlockMs(remainingMs, o.blockMarginMs));
    const started = clock.now();
    const reply = send(slot.connection, name, limited.args);
    const settled = (): void => {
      slot.late -= 1;
      if (slot.late === 0) wake();
    };
    const setAside = (): DeadlineExceededError => {
      slot.late += 1;
      reply.then(settled, settled);
      return new DeadlineExceededError({
        dependency: o.name,
        elapsedMs: clock.now() - started,
        deadlineEpochMs: deadline.epochMs(),
        outcome: 'unknown',
      });
    };
    return (await bounded(reply, deadline, signal, clock, setAside, o.cancelGraceMs)) as T;
  };

  const whenReady = (slot: Slot): Promise<void> => {
    if (slot.ready === undefined) return readyOf(slot.connection);
    return slot.ready.then(() => {
      slot.ready = undefined;
    });
  };

  return {
    command,
    name: o.name,
    on: (listener) => listeners.add(listener),
    get stuck() {
      return slots.filter((s) => s.late > 0).length;
    },
    async close() {
      closed = true;
      await Promise.all(slots.filter((s) => s.owned).map((s) => closeGracefully(s.connection)));
    },
  };
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
      if (timer !== undefined) clock.clearTimer(timer);
      if (signal !== undefined) unsubscribeAbort(signal, onAbort);
      then();
    };
    const onAbort = (): void =>
      finish(() => {
        late(); // the reply is still due all the same
        reject(signal?.reason);
      });
    const timer =
      deadline === undefined
        ? undefined
        : clock.setTimer(() => finish(() => reject(late())), deadline.remainingMs() + graceMs, {
            unref: true,
          });
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
  const slot: Slot = { connection, owned: true, late: 0, ready: undefined };
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
  readonly options: { readonly name?: string; readonly p99Ms?: number };
  readonly store?: {
    readonly kind: string;
    readonly cancelGraceMs?: number;
    readonly blockMarginMs?: number;
  };
}

/**
 * The options of {@link redisDeadlineClient} from a `prazo.config.yaml` dependency with
 * `store: { kind: redis }`: its name, its p99 (given or measured), the store's grace and block margin.
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
  };
}
