import type { Deadline } from '../deadline/deadline.js';
import { withinDeadline as boundedWait, checkFits as storeCheckFits } from '../deadline/store.js';
import { armDeadlineTimer } from '../deadline/timer.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import {
  invoke,
  isPool,
  type MysqlConnection,
  type MysqlServer,
  type MysqlTarget,
  serverOf,
} from './driver.js';
import type { ResolvedMysqlOptions } from './options.js';
import {
  isServerError,
  isStatementInterrupted,
  type LimitedStatement,
  limitStatement,
  ownLimitSlackMs,
} from './statement.js';

/** Fails fast, before any I/O and before a connection is taken, when less than the p99 is left (SPEC D4). */
export function checkFits(deadline: Deadline, options: ResolvedMysqlOptions): void {
  const { name: dependency, p99Ms: neededMs, emit } = options;
  storeCheckFits(deadline, options, (remainingMs) =>
    emit?.(() => ({ type: 'deadline-insufficient', dependency, remainingMs, neededMs, attempt: 1 })),
  );
}

const ATTEMPT = { kind: 'original', attempt: 1 } as const;

/**
 * One connection for one call, and how it ends. A connection is *tainted* once it may still be
 * running a statement (the client stopped waiting), once `KILL QUERY` was sent for it (the kill may
 * land on whatever it runs next), or once its socket failed: a tainted connection is destroyed, never
 * handed back to the pool, so no late reply or late kill can reach the pool's next user.
 */
export class Session {
  private tainted = false;
  private ended = false;

  constructor(
    readonly connection: MysqlConnection,
    readonly server: MysqlServer,
    private readonly pooled: boolean,
  ) {}

  taint(): void {
    this.tainted = true;
  }

  get isTainted(): boolean {
    return this.tainted;
  }

  /** Gives the connection back (pooled, clean), or destroys it (tainted, or `drop`). Idempotent. */
  end(drop = false): void {
    if (this.ended) return;
    if (!this.pooled && !drop && !this.tainted) return; // the caller's own connection, healthy: theirs
    this.ended = true;
    const method = drop || this.tainted ? 'destroy' : 'release';
    const fn = (this.connection as unknown as Record<string, unknown>)[method];
    if (typeof fn !== 'function') return;
    try {
      const returned = (fn as () => unknown).call(this.connection);
      if (returned instanceof Promise) returned.catch(() => undefined);
    } catch {
      // a connection already closed by its driver has nothing left to give back
    }
  }
}

/** A connection of the caller's, or one taken from the pool within what is left of the deadline. */
export async function openSession(
  target: MysqlTarget,
  deadline: Deadline | undefined,
  options: ResolvedMysqlOptions,
): Promise<Session> {
  if (!isPool(target)) return new Session(target, options.server ?? (await serverOf(target)), false);
  const taken = deadline === undefined ? acquire(target) : withinDeadline(acquire(target), deadline, options);
  const connection = await taken;
  try {
    return new Session(connection, options.server ?? (await serverOf(connection)), true);
  } catch (error) {
    new Session(connection, 'mysql', true).end(true);
    throw error;
  }
}

const acquire = (pool: MysqlTarget): Promise<MysqlConnection> =>
  invoke(pool, 'getConnection', []) as Promise<MysqlConnection>;

/** A pool with no free connection must not hold the call past its deadline; a late one goes back. */
export function withinDeadline(
  pending: Promise<MysqlConnection>,
  deadline: Deadline,
  options: ResolvedMysqlOptions,
): Promise<MysqlConnection> {
  const { name, emit } = options;
  return boundedWait(pending, deadline, options.clock, {
    giveBack: (late) => new Session(late, 'mysql', true).end(),
    expired: (latencyMs) => {
      emit?.(() => ({ type: 'attempt', dependency: name, ...ATTEMPT }));
      emit?.(() => ({
        type: 'attempt-end',
        dependency: name,
        ...ATTEMPT,
        latencyMs,
        outcome: 'timeout',
        phase: 'queue',
      }));
      return new DeadlineExceededError({ dependency: `${name} (pool)`, elapsedMs: latencyMs });
    },
  });
}

/** Sends `KILL QUERY <thread>` from another connection; best effort (a kill that fails is dropped). */
export function sendKill(session: Session, via: MysqlTarget | undefined): boolean {
  const id = session.connection.threadId;
  if (via === undefined || typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) return false;
  invoke(via, 'query', [`KILL QUERY ${id}`]).catch(() => undefined);
  return true;
}

/** Runs one statement of a {@link Session} under `deadline` (see {@link guardStatement}). */
export function runStatement(
  session: Session,
  sql: string,
  values: unknown,
  deadline: Deadline,
  options: ResolvedMysqlOptions,
  target: MysqlTarget,
): Promise<unknown> {
  const via = options.killVia ?? (isPool(target) ? target : undefined);
  const execute = (limited: string) =>
    invoke(session.connection, 'query', values === undefined ? [limited] : [limited, values]);
  return guardStatement(sql, session.server, deadline, options, sessionHandle(session, execute, via));
}

/** How a guarded statement reaches a {@link Session}'s connection; `KILL QUERY` is sent from `via`. */
export function sessionHandle(
  session: Session,
  execute: (sql: string) => Promise<unknown>,
  via: MysqlTarget | undefined,
): StatementHandle {
  return {
    execute,
    kill: () => sendKill(session, via),
    taint: () => session.taint(),
    drop: () => {
      session.taint();
      session.end(true);
    },
  };
}

/** How a guarded statement reaches its connection: run it, kill it, mark or drop the connection. */
export interface StatementHandle {
  execute(sql: string): Promise<unknown>;
  /** Sends `KILL QUERY` for the connection from elsewhere; false when there is nowhere to send it from. */
  kill(): boolean;
  /** The connection must not be reused (a kill was sent, or it failed). */
  taint(): void;
  /** The client gives up waiting: the connection is destroyed now. */
  drop(): void;
}

/**
 * Runs one statement under `deadline` with real, server-side cancellation (SPEC D7):
 * - the server's own limit (`max_statement_time` / `MAX_EXECUTION_TIME`) is the first line, when the
 *   statement takes one (see `limitStatement`: on MariaDB never looser than the limit in force);
 * - `KILL QUERY` from another connection at the deadline for a statement the limit does not cover,
 *   `cancelGraceMs` after it for one it does (a backup), and at once when the caller's signal aborts;
 * - `cancelGraceMs` after the kill the client stops waiting: the connection is destroyed (its reply
 *   must never be read as another statement's) and the call rejects.
 * The server's "interrupted" errors become DeadlineExceededError (the driver's error as `cause`),
 * or the signal's reason, when they are the deadline's (see `ours`): a tighter limit already in
 * force, or the statement's own, ending it with time left is the driver's error, unchanged. Once
 * sent, a statement stopped by the deadline has an unknown outcome.
 */
export function guardStatement(
  sql: string,
  server: MysqlServer,
  deadline: Deadline,
  options: ResolvedMysqlOptions,
  handle: StatementHandle,
): Promise<unknown> {
  const { clock, signal, name, cancelGraceMs } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const remainingMs = deadline.remainingMs();
  if (remainingMs <= 0) {
    return Promise.reject(
      new DeadlineExceededError({ dependency: name, elapsedMs: 0, deadlineEpochMs: deadline.epochMs() }),
    );
  }
  const limited = limitStatement(sql, server, remainingMs);
  const started = clock.now();
  const { emit } = options;
  emit?.(() => ({ type: 'attempt', dependency: name, ...ATTEMPT }));
  const ended = (outcome: 'success' | 'error' | 'timeout' | 'cancelled', error?: unknown): void =>
    emit?.(() => ({
      type: 'attempt-end',
      dependency: name,
      ...ATTEMPT,
      latencyMs: clock.now() - started,
      outcome,
      ...(outcome === 'timeout' ? { phase: 'deadline' as const } : {}),
      ...(error === undefined ? {} : { error }),
    }));
  const exceeded = (cause?: unknown): DeadlineExceededError =>
    new DeadlineExceededError({
      dependency: name,
      elapsedMs: clock.now() - started,
      deadlineEpochMs: deadline.epochMs(),
      outcome: 'unknown',
      cause,
    });
  return new Promise((resolve, reject) => {
    let settled = false;
    let killed = false;
    let giveUpTimer: ReturnType<typeof clock.setTimer> | undefined;
    const settle = (then: () => void): void => {
      if (settled) return;
      settled = true;
      killTimer.clear();
      if (giveUpTimer !== undefined) clock.clearTimer(giveUpTimer);
      if (signal !== undefined) unsubscribeAbort(signal, kill);
      then();
    };
    const giveUp = (): void =>
      settle(() => {
        handle.drop();
        const error = signal?.aborted ? signal.reason : exceeded();
        ended(signal?.aborted ? 'cancelled' : 'timeout', error);
        reject(error);
      });
    function kill(): void {
      if (killed || settled) return;
      killed = handle.kill();
      if (killed) handle.taint();
      giveUpTimer = clock.setTimer(giveUp, cancelGraceMs, { unref: true });
    }
    // Re-armed a timer's range at a time (a timer clamps at 24.8 days): a statement under a 30-day
    // deadline is not killed at 24.8 days, and one under an endless deadline arms nothing.
    const graceMs = limited.covered ? cancelGraceMs : 0;
    const killTimer = armDeadlineTimer(clock, () => deadline.remainingMs() + graceMs, kill, { unref: true });
    if (signal !== undefined) subscribeAbort(signal, kill);
    handle.execute(limited.sql).then(
      (value) =>
        settle(() => {
          ended('success');
          resolve(value);
        }),
      (error: unknown) =>
        settle(() => {
          if (!isServerError(error)) handle.taint();
          if (signal?.aborted) {
            ended('cancelled', signal.reason);
            reject(signal.reason);
          } else if (
            isStatementInterrupted(error) &&
            (killed || ours(error, limited, deadline, cancelGraceMs))
          ) {
            const stopped = exceeded(error);
            ended('timeout', stopped);
            reject(stopped);
          } else {
            ended('error', error);
            reject(error);
          }
        }),
    );
  });
}

/**
 * Whether an "interrupted" error is the deadline's. The server's limit error (1969, 3024) is when
 * prazo's own limit set it and it fired at the deadline (see `ownLimitSlackMs`); with more time
 * left it is a tighter limit in force on the server, or the statement's own, and stays the driver's
 * error (#24). A `KILL QUERY` from elsewhere (1317) with time still left is someone else's too.
 */
function ours(error: unknown, limited: LimitedStatement, deadline: Deadline, graceMs: number): boolean {
  const errno = (error as { errno?: unknown }).errno;
  if (errno === 1969 || errno === 3024)
    return limited.covered && deadline.remainingMs() <= ownLimitSlackMs(limited.limitMs);
  return deadline.remainingMs() <= graceMs;
}
