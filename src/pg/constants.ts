/** Fixed values of the PostgreSQL integration (SPEC D4, D7); its options are in `options.ts`. */

/** SQLSTATE `query_canceled`: raised by `statement_timeout` and by a cancel request. */
export const QUERY_CANCELED = '57014';

/** Code of a CancelRequest message in the PostgreSQL wire protocol (1234 << 16 | 5678). */
export const CANCEL_REQUEST_CODE = 80_877_102;
