import { PrazoError } from './base.js';
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

/**
 * The dependency has no instance to send the call to (SPEC X5): its DNS discovery has found none
 * (the name resolves to no address, or the lookup fails) and it never had one. Nothing was sent. A
 * dependency that had instances keeps them through a failed or empty lookup: this error means there
 * never was one to keep.
 */
export class NoInstanceError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.NO_INSTANCE];
  readonly dependency: string;
  readonly hostname: string | undefined;

  constructor(details: NoInstanceDetails) {
    const where = details.hostname === undefined ? '' : ` (${details.hostname} resolves to no address)`;
    super(ErrorCode.NO_INSTANCE, `no instance of ${details.dependency} to call${where}`, {
      cause: details.cause,
    });
    this.dependency = details.dependency;
    this.hostname = details.hostname;
  }
}
