import {
  type InterceptingListener,
  type InterceptorOptions,
  Metadata,
  type NextCall,
  type Requester,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline, type HeaderFormat } from '../deadline/deadline.js';
import { openCall } from '../dependency/dependency.js';
import type { TraceAttributes } from '../dependency/trace.js';
import type { AttemptSlice, Call, Carrier, ExecutorPlan, Transport } from '../dependency/transport.js';
import type { ResultVerdict } from '../dependency/types.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { ResponseTimeoutError } from '../errors/timeout.js';
import { readPushback } from '../retry/pushback.js';
import {
  callersLeftMs,
  channelDeadline,
  grpcDeadlineEpochMs,
  grpcHeaderFormat,
  putDeadlineMetadata,
} from './deadline.js';
import { explainStatus, NOT_ACCEPTED, refusedStatus } from './status.js';

/**
 * prazo/grpc's side of the executor's seam (docs/ARCHITECTURE.md, "The executor's seam"): a gRPC
 * call made through `deadlineInterceptor({ dependency })` is one executor call ({@link GrpcCall},
 * the call's `Transport`) carried by one attempt ({@link GrpcAttempt}, the channel call below the
 * interceptor). The executor owns the deadline (the call's own, capped by the ambient one, else the
 * dependency's default; never past the caller's own deadline metadata, the call's `ceiling`, SPEC
 * D5), D4, the throttle, the concurrency limit (a call may wait in its queue: its channel call then
 * starts later), the latency recorder, the events and the traces. It never
 * retries nor hedges a gRPC call (`idempotent: false`): grpc-js's own retries (a service config's
 * `retryPolicy`) run below the interceptor, inside the one attempt.
 *
 * grpc-js wants the interceptor's call at once, but the executor may start the attempt later (the
 * limit's queue) or never (D4, the throttle, a full queue), and the caller's metadata (its own
 * deadline) is known only when grpc-js starts the call. So the interceptor hands grpc-js an
 * `InterceptingCall` over this call, whose requester opens and starts the executor's call, and whose
 * channel call is created only when the attempt starts, with the attempt's end as its deadline (the
 * deadline is fixed when grpc-js creates a channel call). Until then grpc-js's `InterceptingCall`
 * holds the caller's message and half-close itself (its `processingMetadata`: `next` of a
 * requester's `start` may be called later), and this call holds a `startRead`. A call refused
 * before its attempt answers its caller a status without touching the channel:
 *
 * | refused by | status | `cause` |
 * |---|---|---|
 * | D4 (less than the p99 left), or a slot granted too late | `DEADLINE_EXCEEDED` | DeadlineInsufficientError |
 * | the throttle | `UNAVAILABLE` | ThrottledError |
 * | the concurrency limit (queue full, or waited until the attempt no longer fit) | `UNAVAILABLE` | ConcurrencyLimitError |
 *
 * `UNAVAILABLE` for the limit, not `RESOURCE_EXHAUSTED`: what a caller already handles for a
 * dependency that cannot take the call now (Envoy's circuit breaker overflow, a local concurrency
 * limit too, answers 503, which gRPC reads as `UNAVAILABLE`), and the kind prazo's servers push back
 * with for it (X6). grpc-js's retries below the interceptor never see it: not retried.
 *
 * The attempt ends at its status (unary or streaming): its latency is the time to the status, so for
 * a streaming call the whole stream, which the attempt's timeout (ceil(p99 × slack), or the deadline)
 * bounds too; the concurrency slot is held as long. Judging at the first message instead would
 * record time to first byte, but could not judge the outcome (a stream fails at its status), and
 * would free the slot while the stream still loads the server.
 */

/** A failure status the dependency answered: not accepted, recorded as an error, never retried here. */
const FAILED: ResultVerdict = Object.freeze({ retryable: true });
/** A failure status carrying the server's "do not retry" (SPEC X6): an answer, ends the call. */
const PUSHED_BACK: ResultVerdict = Object.freeze({ retryable: false, outcome: 'error', pushback: true });

/** What `deliver` hands the caller after the caller's own cancel: the status it asked for. */
interface CancelAsked {
  readonly reason: DOMException;
  readonly code: number;
  readonly details: string;
}

/** A timeout the attempt reported, and the status it stands for. */
interface TimedOut {
  readonly error: Error;
  readonly status: StatusObject;
}

type ChannelCall = ReturnType<NextCall>;

/** An attempt's end read at one instant: see {@link GrpcAttempt.end}. */
interface AttemptEnd {
  readonly leftMs: number;
  readonly epochNow: number;
}
type CallerListener = InterceptingListener;
type StartNext = Parameters<NonNullable<Requester['start']>>[2];

/**
 * One gRPC call through the executor: its {@link Transport} (the attempt it carries, the verdict on
 * a status, the delivery of the end), and the call grpc-js's `InterceptingCall` sees below the
 * interceptor (created at once; the channel call behind it only when the attempt starts). See the
 * module documentation.
 */
export class GrpcCall implements Transport<StatusObject, GrpcAttempt> {
  readonly #plan: ExecutorPlan;
  /**
   * The deadline the call is opened with: its own `deadline` option capped by the ambient one, both
   * read in the caller's context (the ambient alone when it has none; neither: the dependency's default).
   */
  readonly #given: Deadline | undefined;
  /** Opened when grpc-js starts the call (the caller's metadata is known only then). */
  #call: Call | undefined;
  readonly #options: InterceptorOptions;
  readonly #nextCall: NextCall;
  /** The dependency's `headerFormat`, without `grpc-timeout` (grpc-js's own). */
  readonly #format: HeaderFormat;
  #metadata: Metadata | undefined;
  #listener: CallerListener | undefined;
  #next: StartNext | undefined;
  #attempt: GrpcAttempt | undefined;
  /** The caller asked for reads before the channel call existed. */
  #readPending = false;
  /** The caller's status is handed over (or scheduled): nothing more reaches it. */
  #delivered = false;
  /** A status due before the caller's listener was known (a cancel before `start`). */
  #pending: StatusObject | undefined;
  #cancel: CancelAsked | undefined;
  #timedOut: TimedOut | undefined;
  /** A `CANCELLED` from below that the call ended with (not the caller's cancel through here). */
  #cancelledBelow: StatusObject | undefined;

  /**
   * A call on `plan`, its deadline read now, in the caller's context: the call's own `deadline`
   * option, capped by the ambient one. The executor's call is opened, and its attempt started, when
   * grpc-js starts the call with the caller's metadata.
   */
  constructor(plan: ExecutorPlan, options: InterceptorOptions, nextCall: NextCall) {
    this.#plan = plan;
    this.#options = options;
    this.#nextCall = nextCall;
    this.#format = grpcHeaderFormat(plan.headerFormat);
    const epoch = grpcDeadlineEpochMs(options.deadline);
    const own = epoch === undefined ? undefined : Deadline.at(epoch, { clock: plan.clock });
    const ambient = currentDeadline();
    this.#given = own === undefined ? ambient : own.min(ambient);
  }

  /** The deadline the executor resolved for the call, once grpc-js started it. */
  get deadline(): Deadline | undefined {
    return this.#call?.deadline;
  }

  /** The requester grpc-js's `InterceptingCall` runs: its `start` begins the executor's call. */
  requester(): Requester {
    return { start: (metadata, listener, next) => this.#begin(metadata, listener, next) };
  }

  /**
   * Opens the executor's call and begins it. The caller's own deadline metadata ({@link
   * callersLeftMs}) is the call's `ceiling`: whichever deadline the executor resolves, the call ends
   * no later, and the headers its attempt writes carry that earlier end (SPEC D5, as prazo/http).
   */
  #begin(metadata: Metadata, listener: CallerListener, next: StartNext): void {
    this.#metadata = metadata;
    this.#listener = listener;
    this.#next = next;
    const pending = this.#pending;
    if (pending !== undefined) {
      this.#pending = undefined;
      process.nextTick(() => listener.onReceiveStatus(pending));
      return;
    }
    // The wall clock first, then the monotonic one: the offset between them errs low, so a header
    // written from the ceiling is never later than the caller's own (as prazo/http reads it).
    const clock = this.#plan.clock;
    const callersMs = callersLeftMs(metadata, this.#format, clock.epochNow());
    const now = clock.now();
    const ceiling =
      callersMs < Number.POSITIVE_INFINITY ? Deadline.afterAt(now, callersMs, clock) : undefined;
    let call: Call;
    try {
      call = openCall(this.#plan, this, { deadline: this.#given, ceiling, idempotent: false }, now);
    } catch (error) {
      this.#deliver(refusedStatus(error), true);
      return;
    }
    this.#call = call;
    call.begin(now);
  }

  // ── the Transport ──────────────────────────────────────────────────────────────────────────────

  /** The executor's slice as the one channel call (never more: the executor neither retries nor hedges it). */
  attempt(slice: AttemptSlice): GrpcAttempt {
    const attempt = new GrpcAttempt(this, slice);
    this.#attempt = attempt;
    return attempt;
  }

  /**
   * Creates the channel call for `attempt`, its deadline the attempt's end (none when farther than
   * grpc-js carries, {@link channelDeadline}: the attempt's own timer ends it), and starts it with the
   * caller's metadata plus that end's deadline headers in the dependency's `headerFormat` (by default
   * `x-deadline-epoch-ms`), each unless the caller set it; both from one reading of the clock.
   */
  send(attempt: GrpcAttempt): void {
    const { leftMs, epochNow } = attempt.end();
    const endless = leftMs === Number.POSITIVE_INFINITY;
    let channel: ChannelCall;
    try {
      // The attempt's end, or none when farther than grpc-js carries: the attempt's timer ends it then.
      channel = this.#nextCall({ ...this.#options, deadline: channelDeadline(leftMs, epochNow) });
    } catch (error) {
      attempt.failed(error);
      return;
    }
    attempt.channel = channel;
    const metadata = this.#metadata!;
    if (!endless) putDeadlineMetadata(metadata, this.#format, leftMs, epochNow);
    // grpc-js's InterceptingCall now calls `start` below, then sends what it held.
    this.#next!(metadata, attempt);
  }

  /** A status the attempt's channel call ended with: the verdict (pushback read unless the dependency ignores it). */
  classify(received: StatusObject): ResultVerdict | undefined {
    if (!NOT_ACCEPTED.has(received.code)) return undefined;
    const told = this.#plan.pushback ? readPushback(received.metadata) : undefined;
    if (told === undefined) return FAILED;
    return told.retry ? { retryable: true, retryAfterMs: told.afterMs } : PUSHED_BACK;
  }

  /** A status holds nothing (its channel call is over): nothing to keep or release. */
  hold(): void {}

  discard(): void {}

  /** The call's end, once: the status the executor settled on, or the error it ended with, as a status. */
  deliver(ok: boolean, value: unknown): void {
    if (ok) {
      this.#deliver(this.#explain(value as StatusObject), false);
      return;
    }
    const timedOut = this.#timedOut;
    if (timedOut !== undefined && value === timedOut.error) {
      this.#deliver(Object.assign({}, timedOut.status, { cause: value }), false);
    } else if (this.#cancelledBelow !== undefined && value === this.#cancelledBelow) {
      this.#deliver(this.#cancelledBelow, false);
    } else if (this.#cancel !== undefined && value === this.#cancel.reason) {
      const { code, details } = this.#cancel;
      this.#deliver({ code, details, metadata: new Metadata() }, true);
    } else {
      // Refused before any attempt (D4, throttle, limit), or a channel call that could not be made.
      this.#deliver(refusedStatus(value), true);
    }
  }

  #explain(received: StatusObject): StatusObject {
    const { name, clock } = this.#plan;
    const started = this.#attempt?.slice.startedAt;
    const deadline = this.#call!.deadline; // an outcome comes from the executor's call: opened
    return explainStatus(
      received,
      name,
      () =>
        new DeadlineExceededError({
          dependency: name,
          ...(started === undefined ? {} : { elapsedMs: clock.now() - started }),
          deadlineEpochMs: Math.floor(deadline.epochMs()),
        }),
    );
  }

  /** Hands `final` to the caller's listener (later, when no channel status is being handled). */
  #deliver(final: StatusObject, later: boolean): void {
    if (this.#delivered) return;
    this.#delivered = true;
    const listener = this.#listener;
    if (listener === undefined) this.#pending = final;
    else if (later) process.nextTick(() => listener.onReceiveStatus(final));
    else listener.onReceiveStatus(final);
  }

  /** For the call's trace (prazo/otel): the RPC semantic conventions' request attributes. */
  traceRequest(): TraceAttributes {
    const path = this.#options.method_definition.path;
    const slash = path.lastIndexOf('/');
    return {
      'rpc.system': 'grpc',
      'rpc.service': path.slice(path.startsWith('/') ? 1 : 0, slash > 0 ? slash : path.length),
      'rpc.method': slash >= 0 ? path.slice(slash + 1) : path,
    };
  }

  traceResult(received: StatusObject): TraceAttributes {
    return { 'rpc.grpc.status_code': received.code };
  }

  // ── what the attempt reports ───────────────────────────────────────────────────────────────────

  /** The attempt's channel call said something before its status: the caller hears it at once. */
  forwardMetadata(metadata: Metadata): void {
    if (!this.#delivered) this.#listener?.onReceiveMetadata(metadata);
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's messages are untyped
  forwardMessage(message: any): void {
    if (!this.#delivered) this.#listener?.onReceiveMessage(message);
  }

  /**
   * `attempt`'s channel call ended with `received`, at `now`. `DEADLINE_EXCEEDED` without the
   * server's "do not retry" is the attempt's time running out (the attempt's end, which the channel
   * call carries as its deadline, passed here or at the server): reported as a timeout, so the
   * recorder counts one, and delivered as that status with the timeout as its cause. `CANCELLED`
   * that did not come through this call's cancel (an interceptor below, the channel) is the caller's
   * kind of end, never the dependency's: the call is abandoned with it (nothing recorded, the
   * throttle told nothing) and the status delivered as it came. Any other status is judged by
   * `classify`.
   */
  attemptEnded(attempt: GrpcAttempt, received: StatusObject, now: number): void {
    const slice = attempt.slice;
    if (received.code === status.CANCELLED) {
      this.#cancelledBelow = received;
      this.#call!.abandon(received);
      return;
    }
    if (received.code === status.DEADLINE_EXCEEDED && this.classify(received) !== PUSHED_BACK) {
      const dependency = slice.dependency;
      const elapsedMs = now - slice.startedAt;
      const error = slice.byDeadline
        ? new DeadlineExceededError({
            dependency,
            elapsedMs,
            deadlineEpochMs: Math.floor(slice.callDeadline.epochMs()),
          })
        : new ResponseTimeoutError({ dependency, elapsedMs, timeoutMs: slice.timeoutMs });
      this.#timedOut = { error, status: received };
      slice.report(false, error, true);
      return;
    }
    slice.report(true, received);
  }

  // ── the call grpc-js's InterceptingCall holds below the interceptor ────────────────────────────

  /**
   * The caller (or an interceptor above) cancels: the executor's call is abandoned (a call waiting for
   * a slot leaves the queue, an attempt under way is halted, its channel call cancelled and its slot
   * freed) and the caller gets the status it asked for.
   */
  cancelWithStatus(code: number, details: string): void {
    const call = this.#call;
    if (call?.settled) {
      this.#attempt?.channel?.cancelWithStatus(code, details);
      return;
    }
    const reason = new DOMException(details || 'Cancelled on client', 'AbortError');
    this.#cancel = { reason, code, details };
    // Before grpc-js started the call: nothing opened, the caller gets its status when it starts.
    if (call === undefined) this.#deliver({ code, details, metadata: new Metadata() }, true);
    else call.abandon(reason);
  }

  getPeer(): string {
    return this.#attempt?.channel?.getPeer() ?? '';
  }

  /** Called by grpc-js's InterceptingCall from `send`'s `next`: the channel call exists. */
  start(metadata: Metadata, listener: Partial<InterceptingListener>): void {
    const channel = this.#attempt!.channel!;
    channel.start(metadata, listener);
    if (this.#readPending) {
      this.#readPending = false;
      channel.startRead();
    }
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's message context and messages are untyped
  sendMessageWithContext(context: any, message: any): void {
    this.#attempt?.channel?.sendMessageWithContext(context, message);
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's messages are untyped
  sendMessage(message: any): void {
    this.#attempt?.channel?.sendMessage(message);
  }

  startRead(): void {
    const channel = this.#attempt?.channel;
    if (channel === undefined) this.#readPending = true;
    else channel.startRead();
  }

  halfClose(): void {
    this.#attempt?.channel?.halfClose();
  }

  getAuthContext(): ReturnType<ChannelCall['getAuthContext']> {
    return this.#attempt?.channel?.getAuthContext() ?? null;
  }
}

/**
 * The one attempt of a {@link GrpcCall}: its channel call, created when the executor starts it, and
 * the listener that channel call reports to. Its end is the status: a timeout (`DEADLINE_EXCEEDED`
 * without the server's "do not retry": the attempt's end, which the channel call carries as its
 * deadline, passed here or at the server) is reported as one, so the recorder counts a timeout;
 * `CANCELLED` is the caller's kind of end; any other status is judged by `classify`.
 */
export class GrpcAttempt implements Carrier, InterceptingListener {
  readonly instance = undefined;
  readonly slice: AttemptSlice;
  readonly #call: GrpcCall;
  channel: ChannelCall | undefined;
  #over = false;

  constructor(call: GrpcCall, slice: AttemptSlice) {
    this.#call = call;
    this.slice = slice;
  }

  start(): void {
    this.#call.send(this);
  }

  /**
   * The attempt's end, min(the call's deadline, `startedAt + timeoutMs`), read once: the ms
   * left to it (never negative; `Infinity` when endless) and the wall clock at that reading. Its
   * epoch ms, rounded down (never later than the executor's own), is `floor(epochNow + leftMs)`: the
   * channel call's deadline and the absolute header; `leftMs` is the relative header.
   */
  end(): AttemptEnd {
    const { clock, startedAt, timeoutMs, callDeadline } = this.slice;
    const now = clock.now();
    const callLeft = callDeadline.remainingMsAt(now, clock);
    const attemptLeft = startedAt + timeoutMs - now;
    const left = attemptLeft < callLeft ? attemptLeft : callLeft;
    return { leftMs: left > 0 ? left : 0, epochNow: clock.epochNow() };
  }

  /** The executor ended the attempt (the caller gave up): its slot is freed, its channel call cancelled. */
  halt(reason: unknown): void {
    const over = this.#over;
    this.#over = true;
    this.slice.releasePermit();
    if (over) return; // its status came first (a CANCELLED from below): nothing left to cancel
    const details = reason instanceof Error ? reason.message : 'Cancelled on client';
    this.channel?.cancelWithStatus(status.CANCELLED, details);
  }

  /** The channel call could not be created. */
  failed(error: unknown): void {
    this.#over = true;
    this.slice.releasePermit();
    this.slice.report(false, error);
  }

  onReceiveMetadata(metadata: Metadata): void {
    if (!this.#over) this.#call.forwardMetadata(metadata);
  }

  // biome-ignore lint/suspicious/noExplicitAny: grpc-js's messages are untyped
  onReceiveMessage(message: any): void {
    if (!this.#over) this.#call.forwardMessage(message);
  }

  onReceiveStatus(received: StatusObject): void {
    if (this.#over) return; // halted: the caller already has its status
    this.#over = true;
    const slice = this.slice;
    const now = slice.clock.now();
    slice.endedAt = now; // the executor records the latency from this same reading
    slice.releasePermit(); // over on the wire: the next call waiting for a slot may start
    this.#call.attemptEnded(this, received, now);
  }
}
