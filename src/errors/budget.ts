import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';
import { failureReason } from './reason.js';

export interface RetryBudgetExhaustedDetails {
  readonly dependency: string;
  /** Original requests in the budget window when the extra attempt was refused. */
  readonly originals: number;
  /** Extra attempts (retries + hedges) already spent in the window. */
  readonly extras: number;
  /** The failure that would have been retried. */
  readonly cause?: unknown;
}

/**
 * An extra attempt was refused by the dependency's retry budget (SPEC R1): saying no fast is the
 * budget doing its job in an incident, not a bug. `cause` holds the failure that was not retried, and
 * the message names it (its code and a short reason, `errors/reason.ts`): the budget ran out *because*
 * the dependency keeps failing that way, which is what an operator reading the log needs first.
 */
export class RetryBudgetExhaustedError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.RETRY_BUDGET_EXHAUSTED];
  readonly dependency: string;
  readonly originals: number;
  readonly extras: number;

  constructor(details: RetryBudgetExhaustedDetails) {
    const reason = details.cause === undefined ? undefined : failureReason(details.cause);
    const last =
      reason === undefined
        ? ''
        : `; the last attempt failed with ${reason}: ${details.dependency} is failing, and more retries would only add to its load`;
    super(
      ErrorCode.RETRY_BUDGET_EXHAUSTED,
      `retry budget exhausted for ${details.dependency}: ${details.extras} extra attempt(s) ` +
        `for ${details.originals} original request(s) in the window${last}`,
      { cause: details.cause },
    );
    this.dependency = details.dependency;
    this.originals = details.originals;
    this.extras = details.extras;
  }
}
