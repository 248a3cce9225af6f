/** Defaults, bounds and fixed values of the PostgreSQL integration (SPEC D4, D7), in one place. */

export const PG_DEFAULTS = Object.freeze({
  /** The dependency's name in errors. */
  name: 'postgres',
  /** Expected p99 of the query (or transaction), in ms: with less left, it is not sent (SPEC D4). */
  p99Ms: 0,
  /**
   * How long past the deadline the client waits for the server's own `statement_timeout` before
   * sending a cancel request itself, in ms. Also the most a transaction's `statement_timeout` may
   * lag behind the remaining time before it is refreshed.
   */
  cancelGraceMs: 100,
});

export const PG_LIMITS = Object.freeze({
  maxMs: 2 ** 31 - 1,
  maxCancelGraceMs: 60_000,
});

/** SQLSTATE `query_canceled`: raised by `statement_timeout` and by a cancel request. */
export const QUERY_CANCELED = '57014';

/** Code of a CancelRequest message in the PostgreSQL wire protocol (1234 << 16 | 5678). */
export const CANCEL_REQUEST_CODE = 80_877_102;
