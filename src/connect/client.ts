import type {
  Interceptor,
  StreamRequest,
  StreamResponse,
  UnaryRequest,
  UnaryResponse,
} from '@connectrpc/connect';
import { type Clock, MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import { currentDeadline } from '../deadline/ambient.js';
import { DeadlineHeaders } from '../deadline/constants.js';
import { Deadline } from '../deadline/deadline.js';
import { refusalOf } from '../deadline/fits.js';
import { formatGrpcTimeout, parseConnectTimeout, parseGrpcTimeout } from '../deadline/parse.js';
import type { Dependency } from '../dependency/dependency.js';
import type { AttemptContext } from '../dependency/types.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { subscribeAbort, unsubscribeAbort } from '../signal/shared-abort.js';
import { toConnectError } from './status.js';

/** Options of {@link connectClientInterceptor}, declared once. */
export const CONNECT_CLIENT_OPTIONS = defineOptions({
  /**
   * The dependency the transport calls (`createDependency({ name, p99Ms, ... })`, one per transport's
   * `baseUrl`): its p99 decides D4, its calibrated attempt timeout and retry budget bound every call,
   * its hedging applies to idempotent procedures, its events reach prazo/otel. Required.
   */
  dependency: option.required(
    option.value<Dependency>(
      'a Dependency (from createDependency)',
      option.hasMethods('execute', 'on', 'update'),
    ),
  ),
  /**
   * Where time comes from for streams, which run outside the executor (a unary call's time is the
   * dependency's clock). Default: the system clock.
   */
  clock: option.clock(),
});

export type ConnectClientOptions = OptionsOf<typeof CONNECT_CLIENT_OPTIONS>;

/** `MethodOptions.IdempotencyLevel` (google/protobuf/descriptor.proto), as numbers. */
const NO_SIDE_EFFECTS = 1;
const IDEMPOTENT = 2;

/**
 * Whether a procedure may run more than once (SPEC R5): its descriptor says
 * `option idempotency_level = NO_SIDE_EFFECTS` (a read, which Connect may also send as GET) or
 * `IDEMPOTENT`. Anything else — no level, as most methods — runs exactly once.
 */
export function isIdempotentProcedure(method: { readonly idempotency?: unknown }): boolean {
  return method.idempotency === NO_SIDE_EFFECTS || method.idempotency === IDEMPOTENT;
}

/** The gRPC and gRPC-web protocols carry the timeout as `grpc-timeout`; Connect as `connect-timeout-ms`. */
function speaksGrpc(header: Headers): boolean {
  return (
    header.has(DeadlineHeaders.grpcTimeout) || /^application\/grpc/i.test(header.get('content-type') ?? '')
  );
}

/**
 * The call's own timeout, in ms from now: Connect-ES writes the call's `timeoutMs` (or the
 * transport's `defaultTimeoutMs`) into the request header before any interceptor runs.
 */
function ownTimeoutMs(header: Headers): number | undefined {
  const grpc = header.get(DeadlineHeaders.grpcTimeout);
  if (grpc !== null) return parseGrpcTimeout(grpc);
  const connect = header.get(DeadlineHeaders.connectTimeout);
  return connect === null ? undefined : parseConnectTimeout(connect);
}

/**
 * The request's headers for one attempt: its deadline — the call's, cut to the end of this attempt —
 * in the protocol's own timeout header (so the server's context and its `signal` know it) and in
 * the dependency's deadline headers (`x-deadline-epoch-ms` by default: absolute, it does not stretch
 * with transit), and the idempotency key when the call has one. A copy: every attempt writes its own.
 */
function attemptHeader(
  header: Headers,
  deadline: Deadline,
  extra: Readonly<Record<string, string>>,
  grpc: boolean,
): Headers {
  const out = new Headers(header);
  const left = deadline.remainingMs();
  if (grpc) out.set(DeadlineHeaders.grpcTimeout, formatGrpcTimeout(left));
  else out.set(DeadlineHeaders.connectTimeout, String(left >= 1 ? Math.floor(left) : 1));
  for (const name of Object.keys(extra)) out.set(name, extra[name]!);
  return out;
}

/**
 * A Connect-ES client interceptor that runs every call through a prazo dependency (SPEC D1, D4, D5,
 * R1–R6, H1): `createConnectTransport({ baseUrl, interceptors: [connectClientInterceptor({ dependency })] })`
 * (likewise the gRPC and gRPC-web transports, Node's or the browser's).
 *
 * - **Deadline.** The call runs under the earliest of its own `timeoutMs`, the ambient deadline (the
 *   request being served, prazo/server or prazo/connect's server side) and, with neither, the
 *   dependency's `defaultDeadlineMs`. Each attempt sends what is left of it, cut to the attempt's
 *   timeout, as the protocol's timeout (`connect-timeout-ms`, or `grpc-timeout`) and as
 *   `x-deadline-epoch-ms`: the server stops when this attempt stops waiting.
 * - **D4.** With less time left than the dependency's p99 the call fails at once with
 *   `deadline_exceeded` whose `cause` is a `DeadlineInsufficientError`: nothing is sent.
 * - **Unary calls** are the executor's (`dependency.execute`): the calibrated attempt timeout, the
 *   retry budget, the concurrency limit and the throttle; retries and hedges only for idempotent
 *   procedures (`idempotency_level = NO_SIDE_EFFECTS` or `IDEMPOTENT` in the descriptor), of the
 *   failures the dependency's `classifyError` calls retryable (a Connect `unavailable` is; a
 *   `grpc-retry-pushback-ms: -1` in the error's metadata stops them, SPEC X6).
 * - **Streams** carry the deadline (timeout headers, and the call's signal aborts at it) and D4 (its
 *   refusal told to the dependency's listeners as a unary call's is), but are never retried or
 *   hedged: their messages cannot be sent again.
 * - **Errors** stay `ConnectError`s: the server's as they came, prazo's own with the Connect code of
 *   their meaning (`deadline_exceeded` for the time running out, `unavailable` for a budget spent, a
 *   throttle or limit refusing) and the prazo error as `cause` (`isPrazoError(error.cause)`). A
 *   handler that passes one on is answered with a pushback by prazo's servers.
 */
export function connectClientInterceptor(options: ConnectClientOptions): Interceptor {
  const o = readOptions('connectClientInterceptor', CONNECT_CLIENT_OPTIONS, options);
  const { dependency } = o;
  const clock = o.clock ?? systemClock;
  return (next) => (req) =>
    req.stream ? stream(next, req, dependency, clock) : unary(next as UnaryNext, req, dependency);
}

type UnaryNext = (req: UnaryRequest) => Promise<UnaryResponse>;
type AnyNext = (req: UnaryRequest | StreamRequest) => Promise<UnaryResponse | StreamResponse>;

async function unary(next: UnaryNext, req: UnaryRequest, dependency: Dependency): Promise<UnaryResponse> {
  const grpc = speaksGrpc(req.header);
  const own = ownTimeoutMs(req.header);
  const operation = (attempt: AttemptContext): Promise<UnaryResponse> =>
    next({
      ...req,
      signal: attempt.signal,
      header: attemptHeader(req.header, attempt.deadline, attempt.headers, grpc),
    });
  try {
    return await dependency.execute(operation, {
      idempotent: isIdempotentProcedure(req.method),
      signal: req.signal,
      // A timeout longer than a timer holds (Connect allows 10 digits of ms, gRPC 8 digits of hours) is
      // as far as one can wait, not an invalid deadline (the executor takes [0, 2^31 − 1] ms).
      ...(own === undefined ? {} : { deadline: own < MAX_TIMER_DELAY_MS ? own : MAX_TIMER_DELAY_MS }),
    });
  } catch (error) {
    throw toConnectError(error);
  }
}

/**
 * A stream's D4 refusal, told as a unary call's is: by the executor itself. `execute` under the same
 * deadline (now refused: time only runs out) ends at once with DEADLINE_INSUFFICIENT, no attempt
 * started, and its `deadline-insufficient` event (and span event, when traced) reaches the
 * dependency's listeners — prazo/otel counts a refused stream as it counts a refused call. The
 * executor's own error is the one thrown; `refused` only if the executor let it run after all.
 */
async function refusedByExecutor(
  dependency: Dependency,
  deadline: Deadline,
  refused: Error,
): Promise<unknown> {
  try {
    await dependency.execute(() => Promise.reject(refused), { deadline, idempotent: false });
  } catch (error) {
    return error;
  }
  return refused;
}

/**
 * A stream: the deadline and D4 without the executor (one attempt, never repeated; only a refusal
 * goes through it, to be told). Its deadline is the earlier of its own timeout and the ambient one;
 * with neither, it passes through as it is. The call's signal aborts at the deadline with a
 * `deadline_exceeded` ConnectError, as Connect-ES's own timeout does.
 */
async function stream(
  next: AnyNext,
  req: StreamRequest,
  dependency: Dependency,
  clock: Clock,
): Promise<StreamResponse> {
  const own = ownTimeoutMs(req.header);
  const ambient = currentDeadline();
  const deadline = own === undefined ? ambient : Deadline.after(own, { clock }).min(ambient);
  if (deadline === undefined) return (await next(req)) as StreamResponse;
  // SPEC D4's one rule (fits.ts), as the executor applies it to a unary call: the p99, and at least 1 ms.
  const refused = refusalOf({ name: dependency.name, p99Ms: dependency.p99Ms }, deadline.remainingMs(), 1);
  if (refused !== undefined) throw toConnectError(await refusedByExecutor(dependency, deadline, refused));
  const started = clock.now();
  const controller = new AbortController();
  const onCaller = (): void => controller.abort(req.signal.reason);
  const onDeadline = (): void =>
    controller.abort(
      toConnectError(
        new DeadlineExceededError({
          dependency: dependency.name,
          elapsedMs: clock.now() - started,
          deadlineEpochMs: deadline.epochMs(),
        }),
      ),
    );
  if (req.signal.aborted) onCaller();
  else req.signal.addEventListener('abort', onCaller, { once: true });
  // The ambient deadline's signal is shared by every call of the request: one listener for all.
  const timer = deadline.signal;
  if (timer.aborted) onDeadline();
  else subscribeAbort(timer, onDeadline);
  // Connect-ES aborts the call's signal when the stream ends (or fails): the deadline is let go then.
  controller.signal.addEventListener('abort', () => unsubscribeAbort(timer, onDeadline), { once: true });
  try {
    return (await next({
      ...req,
      signal: controller.signal,
      header: attemptHeader(req.header, deadline, deadline.toHeaders(), speaksGrpc(req.header)),
    })) as StreamResponse;
  } catch (error) {
    throw toConnectError(error);
  }
}
