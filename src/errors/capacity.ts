import { PrazoError, quoteLine } from './base.js';
import { ErrorCode } from './codes.js';

export interface ConcurrencyLimitDetails {
  readonly dependency: string;
  /** The limit in force when the call was refused (the adaptive limit's value at that instant). */
  readonly limit: number;
  /** Attempts in flight to the dependency at that instant. */
  readonly inFlight: number;
  /** Calls waiting in the queue at that instant, and its bound. */
  readonly queued: number;
  readonly maxQueue: number;
  /**
   * `queue-full`: refused at once, the queue was full. `queue-timeout`: it waited until its attempt
   * would no longer fit the deadline.
   */
  readonly reason: 'queue-full' | 'queue-timeout';
  /** How long it waited in the queue, in ms (0 when refused at once). */
  readonly waitedMs: number;
  /** The failure a refused retry would have retried, when there is one. */
  readonly cause?: unknown;
}

/**
 * The dependency's concurrency limit refused the call (SPEC X7): `limit` attempts were in flight and
 * the queue was full, or the call waited in it until no attempt could fit its deadline. Nothing was
 * sent: the dependency saw nothing, its latency record learns nothing, and the call is not retried
 * (another attempt now would only meet the same limit). Failing fast here is the bulkhead doing its
 * job: the callers of a saturated dependency fail in microseconds instead of piling up behind it.
 */
export class ConcurrencyLimitError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.CONCURRENCY_LIMITED];
  readonly dependency: string;
  readonly limit: number;
  readonly inFlight: number;
  readonly queued: number;
  readonly maxQueue: number;
  readonly reason: 'queue-full' | 'queue-timeout';
  readonly waitedMs: number;

  constructor(details: ConcurrencyLimitDetails) {
    const why =
      details.reason === 'queue-full'
        ? `the queue is full (${details.queued}/${details.maxQueue})`
        : `no slot freed within ${Math.round(details.waitedMs)} ms`;
    super(
      ErrorCode.CONCURRENCY_LIMITED,
      `concurrency limit of ${details.dependency}: ${details.inFlight} in flight (limit ${details.limit}), ${why}`,
      { cause: details.cause },
    );
    this.dependency = details.dependency;
    this.limit = details.limit;
    this.inFlight = details.inFlight;
    this.queued = details.queued;
    this.maxQueue = details.maxQueue;
    this.reason = details.reason;
    this.waitedMs = details.waitedMs;
  }
}

export interface NoInstanceDetails {
  readonly dependency: string;
  /** The name whose instances were looked up (DNS discovery), when there is one. */
  readonly hostname?: string;
  /** Why there is none: the lookup's error, when it failed. */
  readonly cause?: unknown;
}

/** The brand of a discovery outcome that is not a resolver's error (see {@link discoveryError}). */
const DISCOVERY_OUTCOME = Symbol.for('prazo.discovery-outcome');

/**
 * An outcome of DNS discovery that no resolver reported, as an `Error` with a `code` (so that the
 * `discovery-failed` event and a `NoInstanceError`'s `cause` carry it like a resolver's): the name
 * resolves to no address (`ENODATA`), a lookup gave no answer in time (`ETIMEOUT`), too many lookups
 * are still unanswered to start another (`EBUSY`). Its message says it whole, hostname included:
 * a {@link NoInstanceError} quotes it as is, where a resolver's error is quoted as "the lookup of
 * <name> failed: <error>".
 */
export function discoveryError(code: 'ENODATA' | 'ETIMEOUT' | 'EBUSY', message: string): Error {
  return Object.assign(new Error(message), { code, [DISCOVERY_OUTCOME]: true });
}

/** The name resolved, to no address (a Service scaled to zero, a name with no A/AAAA record). */
export function noAddressError(hostname: string): Error {
  return discoveryError('ENODATA', `${hostname} resolves to no address`);
}

/** Longest quote of a resolver's error in a message (the whole error stays the `cause`). */
const MAX_QUOTE = 200;

/** Text that came from a resolver, quoted on one line: control characters escaped, length bounded. */
const quote = (text: string): string => quoteLine(text, MAX_QUOTE);

/** What a failed lookup said: its message, with its `code` in front when the message lacks it. */
function describeFailure(cause: unknown): string {
  if (!(cause instanceof Error)) return quote(String(cause));
  const code = (cause as { code?: unknown }).code;
  const message = cause.message === '' ? cause.name : cause.message;
  return quote(typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message);
}

/** Why discovery found no instance, in words: what the lookup did (failed, timed out, found none). */
function whyNone(hostname: string | undefined, cause: unknown): string {
  if (hostname === undefined) return '';
  if (cause === undefined) return ` (${quote(hostname)} resolves to no address)`;
  if (cause instanceof Error && (cause as { [DISCOVERY_OUTCOME]?: boolean })[DISCOVERY_OUTCOME] === true) {
    return ` (${quote(cause.message)})`;
  }
  return ` (the lookup of ${quote(hostname)} failed: ${describeFailure(cause)})`;
}

/**
 * The dependency has no instance to send the call to (SPEC X5): its DNS discovery has found none
 * and it never had one. The message says what the lookup did — it failed (with the resolver's
 * error, which is also the `cause`), it gave no answer in time, or the name resolves to no address —
 * because the remedies differ (the resolver, against the Service). Nothing was sent. A dependency
 * that had instances keeps them through a failed, late or empty lookup: this error means there never
 * was one to keep.
 */
export class NoInstanceError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.NO_INSTANCE];
  readonly dependency: string;
  readonly hostname: string | undefined;

  constructor(details: NoInstanceDetails) {
    const where = whyNone(details.hostname, details.cause);
    super(ErrorCode.NO_INSTANCE, `no instance of ${details.dependency} to call${where}`, {
      cause: details.cause,
    });
    this.dependency = details.dependency;
    this.hostname = details.hostname;
  }
}
