import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';

export interface ClientClosedDetails {
  readonly dependency: string;
}

/**
 * The client was closed (its `close()` was called) before the call could be written: nothing was
 * sent, no connection was taken, and the call is not retried (every later call meets the same closed
 * client). It is the caller's lifecycle, not the dependency's failure: a call made during shutdown, a
 * client closed under a caller still holding it. Rejected, never thrown synchronously, by a
 * promise-returning method.
 */
export class ClientClosedError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.CLIENT_CLOSED];
  readonly dependency: string;

  constructor(details: ClientClosedDetails) {
    super(ErrorCode.CLIENT_CLOSED, `the client of ${details.dependency} is closed: nothing was sent`);
    this.dependency = details.dependency;
  }
}
