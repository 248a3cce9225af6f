import type { Deadline } from '../deadline/deadline.js';
import type { Dependency } from '../dependency/dependency.js';
import type { ExecuteOptions } from '../dependency/options.js';
import type { AttemptContext, ResultVerdict } from '../dependency/types.js';
import { isClientClosed } from '../errors/guards.js';
import { markDependencyFailure } from '../retry/pushback.js';
import { answered, type RedisCommand, readsOnly, serverAnswered } from './commands.js';
import type { Connections, Slot } from './connections.js';

/**
 * `redisDeadlineClient(client, { dependency })`: each exchange with the server (a command, a
 * transaction's or a pipeline's commands written together, a session's command) is one call of the
 * executor, `dependency.execute(attempt, { idempotent, deadline, signal, classify })`, as prazo/connect's
 * are. The executor resolves the deadline (the call's, never past the ambient one, else its
 * `defaultDeadlineMs`) and owns D4 with its p99, its throttle, its concurrency limit, the retry plan
 * and its budget, hedging, the latency recorder, the events and the traces. The client keeps what
 * only it can do, inside the attempt: the connection it writes to (a late reply sets its connection
 * aside, a session's is held), the wait for it to be ready, a blocking command's server-side block
 * ending `blockMarginMs` before the attempt's end (min(the call's deadline, its start + the
 * executor's attempt timeout): `ctx.deadline`), and stopping when the attempt's signal aborts (its
 * timeout, the caller, a hedge that won).
 *
 * What the executor is told:
 * - **idempotent** when every command only reads (`READ_ONLY_COMMANDS`, commands.ts) and it is not a
 *   session's: such an exchange may be retried after a failure (within the attempts, the retry budget
 *   and the deadline) and hedged. A write, a script, a blocking command is sent once. A session's
 *   command never is: the connection it is held on may have been replaced under it (its WATCH gone),
 *   and the caller must hear that, not a transparent retry. The clients' own resending (ioredis's
 *   `autoResendUnfulfilledCommands` after a reconnect) is below the attempt and is theirs.
 * - **the verdict**: a reply, a command's own error reply included (`WRONGTYPE`, a script's error,
 *   `EXECABORT`), is an answer: a success for the recorder and the throttle, the error the caller's.
 *   A reply that never came (a connection closed or reset under it) or that says the server cannot
 *   serve now (`LOADING`, `BUSY`, `OOM`, `MASTERDOWN`, a full server…) is the dependency failing: not
 *   accepted by the throttle, recorded as an error, retried when idempotent. A reply not come by the
 *   attempt's end is the executor's timeout. Such a failure reaches the caller as the client's own
 *   error, marked as the dependency's (SPEC X6), as the executor marks a thrown one.
 */

/** What one attempt's exchange came to: each command's reply, or why it has none. */
interface Exchange {
  readonly replies: PromiseSettledResult<unknown>[];
}

/** Every reply came (a command's error reply included): the server answered. */
const ANSWERED: ResultVerdict = Object.freeze({ retryable: false });
/** Some reply did not come, or said the server cannot serve: the dependency failed this attempt. */
const NOT_ANSWERED: ResultVerdict = Object.freeze({ retryable: true });

const verdictOf = (exchange: Exchange): ResultVerdict =>
  answered(exchange.replies) ? ANSWERED : NOT_ANSWERED;

/**
 * One exchange as a call of `dependency` (see the module documentation); resolves with each reply's
 * outcome, as the client's own path does, or rejects with the executor's refusal or timeout, or the
 * caller's abort reason.
 */
export async function exchangeThrough(
  dependency: Dependency,
  connections: Connections,
  commands: readonly RedisCommand[],
  held: Slot | undefined,
  deadline: Deadline | undefined,
  signal: AbortSignal | undefined,
): Promise<PromiseSettledResult<unknown>[]> {
  const attempt = async (ctx: AttemptContext): Promise<Exchange> => {
    const stop = ctx.signal;
    try {
      const bounds = { deadline: ctx.deadline, timed: false, graceMs: 0, signal: stop };
      return { replies: await connections.exchange(commands, held, bounds, ctx.kind === 'hedge') };
    } catch (error) {
      if (stop.aborted) throw error; // the attempt is over: the executor has decided already
      // Closed meanwhile (the call waited in the executor's queue): the caller's doing, not the
      // server's; thrown, it is not retried and not counted against the dependency.
      if (isClientClosed(error)) throw error;
      // A connection that could not be made ready: no reply, as from one closed under the commands.
      return { replies: commands.map(() => ({ status: 'rejected', reason: error })) };
    }
  };
  const options: ExecuteOptions<Exchange> = {
    idempotent: held === undefined && readsOnly(commands),
    classify: verdictOf,
    ...(deadline === undefined ? {} : { deadline }),
    ...(signal === undefined ? {} : { signal }),
  };
  const { replies } = await dependency.execute(attempt, options);
  for (const reply of replies) {
    if (reply.status === 'rejected' && !serverAnswered(reply.reason))
      markDependencyFailure(reply.reason, dependency.name);
  }
  return replies;
}
