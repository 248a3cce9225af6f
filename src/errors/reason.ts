import { isPrazoError } from './base.js';

/**
 * What an attempt's failure was, in words a caller may be shown: a stable code and a short reason
 * from a fixed table, never the failure's own message. A socket error's message names the address it
 * tried (`connect ECONNREFUSED 10.0.3.7:5432`), a driver's names the statement or the table: that is
 * this service's inside, and a `503` body travels to callers and their logs. The code is what an
 * operator searches for; the reason says in plain words what it means.
 *
 * gRPC and cockatiel surface the last attempt's failure the same way (`UNAVAILABLE: ...`, the
 * wrapped error as the reason of `BrokenCircuitError`); prazo's budget and dependency errors carry it
 * in their message (issue 27), so `RETRY_BUDGET_EXHAUSTED` says *why* the retries were needed.
 */

/** Node's and undici's socket and DNS codes, and what each means for a caller. */
const SOCKET_REASONS: Readonly<Record<string, string>> = Object.freeze({
  ECONNREFUSED: 'connection refused: nothing listens there, or the instance is down',
  ECONNRESET: 'connection reset by the other side',
  EPIPE: 'the connection closed while the request was written',
  ECONNABORTED: 'connection aborted',
  ETIMEDOUT: "the operating system's connect or read timeout passed",
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EHOSTDOWN: 'host down',
  ENOTFOUND: 'the name is not in DNS',
  EAI_AGAIN: 'DNS lookup failed for now',
  EADDRNOTAVAIL: 'no local address or port left to connect from',
  UND_ERR_SOCKET: 'the socket closed before the response was complete',
  UND_ERR_CONNECT_TIMEOUT: "no connection within undici's connect timeout",
  UND_ERR_HEADERS_TIMEOUT: "no response head within undici's headers timeout",
  UND_ERR_BODY_TIMEOUT: "the body stalled past undici's body timeout",
  UND_ERR_CLOSED: 'the client was closed',
  UND_ERR_DESTROYED: 'the client was destroyed',
  UND_ERR_ABORTED: 'the request was aborted',
  UND_ERR_INFO: 'undici refused the request',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'the body was shorter or longer than its content-length',
  ERR_TLS_CERT_ALTNAME_INVALID: "the server's certificate does not name the host",
  CERT_HAS_EXPIRED: "the server's certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the server's certificate is self-signed",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the server's certificate cannot be verified",
});

/** prazo's own codes: what each failure means, in a few words. */
const PRAZO_REASONS: Readonly<Record<string, string>> = Object.freeze({
  DEADLINE_EXCEEDED: 'the deadline passed',
  DEADLINE_INSUFFICIENT: 'too little time was left to try',
  CONNECT_TIMEOUT: 'no connection within the connect timeout',
  CONNECT_FAILED: 'could not connect',
  QUEUE_TIMEOUT: 'no free connection in time',
  RESPONSE_TIMEOUT: 'no response within the response timeout',
  BODY_TIMEOUT: 'the response body stalled',
  RETRY_BUDGET_EXHAUSTED: 'the retry budget refused another attempt',
  CONCURRENCY_LIMITED: 'too many calls in flight',
  THROTTLED: 'refused locally: most recent attempts failed',
  NO_INSTANCE: 'no instance to call',
  DEPENDENCY_FAILED: 'the dependency answered with a failure',
});

/** gRPC status codes by number (the gRPC spec's `statuscodes.md`). */
const GRPC_NAMES: readonly string[] = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** prazo codes that stand over another failure, named with it. */
const WRAPPERS: ReadonlySet<string> = new Set([
  'CONNECT_FAILED',
  'DEPENDENCY_FAILED',
  'RETRY_BUDGET_EXHAUSTED',
]);

/** How deep a cause chain is followed for a code (`fetch failed` → its socket error). */
const MAX_DEPTH = 4;

const CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
/** A SQLSTATE (PostgreSQL's `57014`, `40001`): five digits or capitals. */
const SQLSTATE = /^[0-9A-Z]{5}$/;
const NAME = /^[A-Za-z][A-Za-z0-9]{0,39}$/;

const record = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;

/** One error's own code and reason, or undefined when it has no code we can name. */
function own(e: Record<string, unknown>): string | undefined {
  const code = e.code;
  if (isPrazoError(e) && typeof code === 'string') {
    const status = e.httpStatus;
    const grpc = e.grpcCode;
    if (code === 'DEPENDENCY_FAILED' && typeof status === 'number') return `${code} (answered ${status})`;
    if (code === 'DEPENDENCY_FAILED' && typeof grpc === 'number')
      return `${code} (answered gRPC ${GRPC_NAMES[grpc] ?? grpc})`;
    return `${code} (${PRAZO_REASONS[code] ?? 'failed'})`;
  }
  if (typeof code === 'string') {
    const reason = SOCKET_REASONS[code];
    if (reason !== undefined) return `${code} (${reason})`;
    if (SQLSTATE.test(code) && typeof e.severity === 'string') return `SQLSTATE ${code}`;
    if (CODE.test(code)) return code;
  }
  // A gRPC client error: a numeric `code` with `details` and `metadata` (@grpc/grpc-js).
  if (typeof code === 'number' && Number.isInteger(code) && 'details' in e) {
    const name = GRPC_NAMES[code];
    if (name !== undefined) return `gRPC ${name}`;
  }
  return undefined;
}

/**
 * The code and short reason of `error`, looked for on the error, then along its `cause` chain and in
 * an `AggregateError`'s first error (undici's happy eyeballs), e.g. `ECONNREFUSED (connection refused:
 * nothing listens there, or the instance is down)`, `RESPONSE_TIMEOUT (no response within the
 * response timeout)`, `gRPC UNAVAILABLE`. An error without a code gives its class name (`TypeError`);
 * anything else gives undefined. Never the message.
 */
export function failureReason(error: unknown): string | undefined {
  return reasonWithin(error, MAX_DEPTH);
}

/** {@link failureReason} looking at most `levels` causes down (a cause chain may loop). */
function reasonWithin(error: unknown, levels: number): string | undefined {
  let current: unknown = error;
  let name: string | undefined;
  for (let depth = 0; depth <= levels; depth += 1) {
    const e = record(current);
    if (e === undefined) break;
    const found = own(e);
    if (found !== undefined) {
      // A prazo error that wraps the real failure (CONNECT_FAILED over ECONNREFUSED, a budget
      // refusal over the failure it did not retry): say the inner one too.
      if (isPrazoError(e) && WRAPPERS.has(e.code) && e.httpStatus === undefined && e.grpcCode === undefined) {
        const inner = reasonWithin(e.cause, levels - depth - 1);
        if (inner !== undefined) return e.code === 'DEPENDENCY_FAILED' ? inner : `${e.code}: ${inner}`;
      }
      return found;
    }
    if (name === undefined && current instanceof Error && NAME.test(current.name)) name = current.name;
    const errors = e.errors;
    const next = e.cause ?? (Array.isArray(errors) ? errors[0] : undefined);
    current = next;
  }
  return name;
}
