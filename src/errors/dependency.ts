import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';
import { failureReason } from './reason.js';

export interface DependencyFailedDetails {
  readonly dependency: string;
  /**
   * The HTTP status the dependency answered (a 5xx, 408 or 429). Not named `status`: Express and
   * Fastify would answer *your* caller with a field of that name.
   */
  readonly httpStatus?: number;
  /** The gRPC status code it answered (UNAVAILABLE = 14, INTERNAL = 13, ...). */
  readonly grpcCode?: number;
  /** The dependency asked not to be retried itself (its own dependency failed, SPEC X6). */
  readonly pushback?: boolean;
  readonly cause?: unknown;
}

/**
 * A dependency *answered* with a failure (SPEC X6): an HTTP 5xx, 408 or 429 that prazo's client did
 * not retry, or could not (attempts, budget, deadline, the dependency's own pushback), or a gRPC
 * failure status. prazo's HTTP client returns such an answer as the response it is; a handler that
 * fails because of it throws this error, and prazo/server then tells its own caller not to retry
 * (`503` + `grpc-retry-pushback-ms: -1`): the dependency's budget was spent where it failed.
 * prazo/grpc's client interceptor attaches one as the `cause` of a gRPC failure status.
 *
 * @example
 * const res = await inventory.request('/stock');
 * if (res.statusCode >= 500) {
 *   await res.body.dump();
 *   throw new DependencyFailedError({ dependency: 'inventory', httpStatus: res.statusCode });
 * }
 */
export class DependencyFailedError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.DEPENDENCY_FAILED];
  readonly dependency: string;
  readonly httpStatus: number | undefined;
  readonly grpcCode: number | undefined;
  readonly pushback: boolean;

  constructor(details: DependencyFailedDetails) {
    // Without a status, the failure itself says what happened (its code and a short reason, never
    // its message: `errors/reason.ts`); `supplier failed` alone sent operators to the logs.
    const reason =
      details.httpStatus === undefined && details.cause !== undefined
        ? failureReason(details.cause)
        : undefined;
    const what =
      details.httpStatus !== undefined
        ? `answered ${details.httpStatus}`
        : details.grpcCode !== undefined
          ? `answered gRPC status ${details.grpcCode}${reason === undefined ? '' : ` (${reason})`}`
          : reason === undefined
            ? 'failed'
            : `failed: ${reason}`;
    const pushed = details.pushback === true ? ' and asked not to be retried' : '';
    super(ErrorCode.DEPENDENCY_FAILED, `${details.dependency} ${what}${pushed}`, { cause: details.cause });
    this.dependency = details.dependency;
    this.httpStatus = details.httpStatus;
    this.grpcCode = details.grpcCode;
    this.pushback = details.pushback === true;
  }
}
