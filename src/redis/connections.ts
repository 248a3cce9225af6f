import type { Clock } from '../clock/clock.js';
import type { Deadline } from '../deadline/deadline.js';
import { armDeadlineTimer, type DeadlineTimer } from '../deadline/timer.js';
import { ClientClosedError } from '../errors/closed.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { blockAsked, boundBlocking, serverBlockMs, shareBlock } from './blocking.js';
import type { RedisArg, RedisCommand } from './commands.js';

/**
 * The connections one `redisDeadlineClient` writes to — the client it was given and the duplicates it
 * opens — and the exchange of commands on one of them, whichever path (its own, or an executor's)
 * decided to send it. A connection whose reply is late is set aside until that reply comes, so no
 * command queues behind it and no late reply is read as another command's; a session holds one.
 */

/**
 * A Redis client of `ioredis` (5/6) or `redis` (node-redis 4/5/6), structurally: both are optional
 * peers, never imported. ioredis sends with `call`, node-redis with `sendCommand`; both `duplicate`.
 */
export interface RedisConnection {
  duplicate(...args: never[]): unknown;
  call?(...args: never[]): unknown;
  sendCommand?(...args: never[]): unknown;
}

export const isConnection = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  typeof (value as RedisConnection).duplicate === 'function' &&
  (typeof (value as RedisConnection).call === 'function' ||
    typeof (value as RedisConnection).sendCommand === 'function');

/** One connection and what prazo knows of it. */
export interface Slot {
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

/** How long an exchange may take, and who may stop it. */
export interface ExchangeBounds {
  /**
   * The instant the exchange must end by: a blocking command's server-side block ends
   * `blockMarginMs` before it. Undefined: no limit.
   */
  readonly deadline: Deadline | undefined;
  /**
   * Whether the client's own timers end the waits at `deadline` (+ `graceMs` for a reply): the thin
   * path's. Through an executor its attempt's timer does, aborting `signal`.
   */
  readonly timed: boolean;
  /** Grace past `deadline` before a reply is no longer waited for, in ms. */
  readonly graceMs: number;
  /** Stops every wait: the caller's signal, or the executor's attempt's. */
  readonly signal: AbortSignal | undefined;
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

/**
 * The client's connections. Shared commands go to the connection in use until it is set aside or
 * held, then to the next free one (or a new duplicate, at most `maxConnections` in all), which stays
 * in use; a session holds one of its own; a hedge takes a spare one.
 */
export class Connections {
  readonly #client: RedisConnection;
  readonly #max: number;
  readonly #clock: Clock;
  readonly #name: string;
  readonly #blockMarginMs: number;
  readonly #slots: Slot[];
  /** The connection shared commands go to, until it is set aside or held. */
  #current: Slot;
  readonly #waiters = new Set<() => void>();
  /**
   * Set by {@link close}: no connection is given out any more (a call that passed the client's own
   * check before it closed, then waited in an executor's queue, would otherwise open a duplicate that
   * nothing closes), and the waits for one end with ClientClosedError.
   */
  #closed = false;

  constructor(
    client: RedisConnection,
    maxConnections: number,
    blockMarginMs: number,
    clock: Clock,
    name: string,
  ) {
    this.#client = client;
    this.#max = maxConnections;
    this.#blockMarginMs = blockMarginMs;
    this.#clock = clock;
    this.#name = name;
    this.#current = newSlot(client, false);
    this.#slots = [this.#current];
  }

  /** How many connections await a late reply right now. */
  get stuck(): number {
    return this.#slots.filter((s) => s.late > 0).length;
  }

  /**
   * Writes `commands` together on one connection — `held`, a spare one (`spare`: a hedge, which
   * would gain nothing behind the attempt it races), or the shared one — once it is ready, each
   * blocking command's server-side block bounded by `bounds.deadline`; resolves with each reply's
   * outcome. A wait for a connection, or for it to be ready, ends with the bounds; a reply not come
   * by then sets its connection aside until it comes.
   */
  async exchange(
    commands: readonly RedisCommand[],
    held: Slot | undefined,
    bounds: ExchangeBounds,
    spare = false,
  ): Promise<PromiseSettledResult<unknown>[]> {
    // A session's command queued in an executor when the client closed: not written either.
    if (this.#closed) throw new ClientClosedError({ dependency: this.#name });
    const { signal } = bounds;
    const timedDeadline = bounds.timed ? bounds.deadline : undefined;
    const choose = spare ? () => this.#chooseOther() : () => this.#chooseShared();
    const slot = held ?? (await this.#take(choose, timedDeadline, signal));
    if (slot.ready !== undefined || !isReady(slot.connection)) {
      await bounded(this.#whenReady(slot), timedDeadline, signal, this.#clock, () => notSent(this.#name));
    }
    if (signal?.aborted) throw signal.reason;
    const deadline = bounds.deadline;
    if (deadline === undefined) return Promise.allSettled(this.#write(slot, commands));
    const remainingMs = deadline.remainingMs();
    if (remainingMs <= 0) throw notSent(this.#name);
    const blockMs = serverBlockMs(remainingMs, this.#blockMarginMs);
    const replies = Promise.allSettled(this.#write(slot, commands, blockMs));
    const started = this.#clock.now();
    const late = (): DeadlineExceededError => {
      this.#setAside(slot, replies);
      return new DeadlineExceededError({
        dependency: this.#name,
        elapsedMs: this.#clock.now() - started,
        deadlineEpochMs: deadline.epochMs(),
        outcome: 'unknown',
      });
    };
    return bounded(replies, timedDeadline, signal, this.#clock, late, bounds.graceMs);
  }

  /** A connection held for a session (released with {@link release}), or a wait for one. */
  hold(deadline: Deadline | undefined, signal: AbortSignal | undefined): Promise<Slot> {
    return this.#take(() => this.#chooseHeld(), deadline, signal);
  }

  /**
   * A session's connection back to everyone, after what it left on the server is undone: written
   * now, so that it precedes whatever the next user writes (replies ignored: on a connection that
   * reconnected meanwhile there is nothing to undo, and the server says so).
   */
  release(slot: Slot): void {
    const undo: RedisCommand[] = slot.inMulti ? [['DISCARD']] : slot.watching ? [['UNWATCH']] : [];
    for (const reply of this.#write(slot, undo)) reply.catch(() => undefined);
    slot.inMulti = false;
    slot.watching = false;
    slot.held = false;
    this.#wake();
  }

  /**
   * Closes the duplicates it opened (after their pending replies); the given client stays its owner's.
   * From now on no connection is given out: a wait for one ends at once with ClientClosedError.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wake();
    await Promise.all(this.#slots.filter((s) => s.owned).map((s) => closeGracefully(s.connection)));
  }

  /** The connection stays set aside until the reply it still owes has come. */
  #setAside(slot: Slot, replies: Promise<unknown>): void {
    slot.late += 1;
    const settled = (): void => {
      slot.late -= 1;
      if (slot.late === 0) this.#wake();
    };
    replies.then(settled, settled);
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  #usable(s: Slot): boolean {
    return s.late === 0 && !s.held;
  }

  #open(): Slot | undefined {
    if (this.#slots.length >= this.#max) return undefined;
    const slot = openDuplicate(this.#client);
    this.#slots.push(slot);
    return slot;
  }

  /** The connection in use while it is free, else the next free one (or a new duplicate), kept. */
  #chooseShared(): Slot | undefined {
    if (this.#usable(this.#current)) return this.#current;
    const next = this.#slots.find((s) => this.#usable(s)) ?? this.#open();
    if (next !== undefined) this.#current = next;
    return next;
  }

  /**
   * A free connection the shared commands do not use (a new duplicate if there is room), else theirs:
   * a session's, or a hedge's (it would gain nothing queued behind the attempt it races).
   */
  #chooseOther(): Slot | undefined {
    const current = this.#current;
    return (
      this.#slots.find((s) => this.#usable(s) && s !== current) ??
      this.#open() ??
      (this.#usable(current) ? current : undefined)
    );
  }

  /** A connection for a session, then held. */
  #chooseHeld(): Slot | undefined {
    const slot = this.#chooseOther();
    if (slot !== undefined) slot.held = true;
    return slot;
  }

  /** A connection from `choose`, or a wait for one no longer than the deadline (or the signal). */
  #take(
    choose: () => Slot | undefined,
    deadline: Deadline | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Slot> {
    if (this.#closed) return Promise.reject(new ClientClosedError({ dependency: this.#name }));
    const now = choose();
    if (now !== undefined) return Promise.resolve(now);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let timer: DeadlineTimer | undefined;
      const done = (): void => {
        this.#waiters.delete(waiter);
        timer?.clear();
        if (signal !== undefined) unsubscribeAbort(signal, onAbort);
      };
      const waiter = (): void => {
        if (this.#closed) {
          done();
          reject(new ClientClosedError({ dependency: this.#name }));
          return;
        }
        const slot = choose();
        if (slot === undefined) return;
        done();
        resolve(slot);
      };
      const onAbort = (): void => {
        done();
        reject(signal?.reason);
      };
      this.#waiters.add(waiter);
      if (signal !== undefined) subscribeAbort(signal, onAbort);
      if (deadline !== undefined) {
        // Re-armed a timer's range at a time: a deadline 30 days away is not cut at 24.8 days.
        timer = armDeadlineTimer(
          this.#clock,
          () => deadline.remainingMs(),
          () => {
            done();
            reject(
              new DeadlineExceededError({
                dependency: `${this.#name} (every connection awaits a late reply or is held by a session)`,
              }),
            );
          },
          { unref: true },
        );
      }
    });
  }

  /**
   * Writes the commands to one connection in one go (nothing can come between), tracking its state.
   * `blockMs` is what the server may spend blocking on all of them: it runs them one after the
   * other, so the blocking ones share it (SPEC D7) rather than each taking it whole.
   */
  #write(slot: Slot, commands: readonly RedisCommand[], blockMs?: number): Promise<unknown>[] {
    const shares = blockMs === undefined ? undefined : blockShares(commands, blockMs);
    return commands.map(([name, args = []], i) => {
      track(slot, name);
      const share = shares?.get(i);
      const limited = share === undefined ? args : boundBlocking(name, args, share).args;
      return send(slot.connection, name, limited);
    });
  }

  /** One wait per connection however many commands wait on it: one `ready` listener, not one each. */
  #whenReady(slot: Slot): Promise<void> {
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
  }
}

/** Each blocking command's (by index) share of the block budget of one exchange. */
function blockShares(commands: readonly RedisCommand[], budgetMs: number): Map<number, number> {
  const blocking: number[] = [];
  const asked: number[] = [];
  commands.forEach(([name, args = []], i) => {
    const ms = blockAsked(name, args);
    if (ms === undefined) return;
    blocking.push(i);
    asked.push(ms);
  });
  const shares = shareBlock(asked, budgetMs);
  return new Map(blocking.map((index, k) => [index, shares[k]!]));
}

function newSlot(connection: RedisConnection, owned: boolean): Slot {
  return { connection, owned, late: 0, ready: undefined, held: false, inMulti: false, watching: false };
}

function notSent(name: string): DeadlineExceededError {
  return new DeadlineExceededError({ dependency: `${name} (not connected)` });
}

/**
 * `work` raced against the deadline (+ `graceMs`) and the signal; on either, the error `late()`
 * makes (which also takes care of the reply still due; on the signal its reason is the rejection).
 * The work itself is never cancelled: a command once written stays in its client's reply queue.
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
    if (signal !== undefined) {
      if (signal.aborted) onAbort();
      else subscribeAbort(signal, onAbort);
    }
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
