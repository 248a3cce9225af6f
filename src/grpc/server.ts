import type { EventEmitter } from 'node:events';
import type { Clock } from '../clock/clock.js';
import { runWithDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import { deadlineReader, INCOMING_DEADLINE_OPTIONS, incomingDefaults } from '../deadline/headers.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { type CallLike, readCallDeadline } from './incoming.js';
import { toGrpcError } from './status.js';

/**
 * Options of {@link withGrpcDeadline}, declared once: the incoming-deadline options of every server
 * integration (`defaultMs`, `maxMs`, `clockSkewMs` for an `x-deadline-epoch-ms` metadata entry,
 * `clock`) and the pushback of a dependency's failure.
 */
export const GRPC_DEADLINE_OPTIONS = defineOptions(
  {
    ...INCOMING_DEADLINE_OPTIONS.specs,
    /**
     * Retry at one layer (SPEC X6): a handler that fails because one of its dependencies failed (a
     * prazo deadline, timeout, connect, budget or DependencyFailedError, on the error or its `cause`
     * chain, as prazo's `deadlineInterceptor` attaches to a dependency's failure status) is answered
     * `UNAVAILABLE` or `DEADLINE_EXCEEDED` with the trailer `grpc-retry-pushback-ms: -1`: gRPC's own
     * "do not retry" (A6). Default true.
     */
    pushback: option.boolean({ default: true }),
  },
  (values, report, context) => INCOMING_DEADLINE_OPTIONS.check(values, report, context),
);

export type GrpcDeadlineOptions = OptionsOf<typeof GRPC_DEADLINE_OPTIONS>;

/** Set on the call object by {@link withGrpcDeadline}. */
export interface GrpcDeadlineFields {
  /** The call's deadline, capped by the local maximum. */
  deadline: Deadline;
  /** Aborts at that deadline or when the call is cancelled (client gone, grpc-js deadline). */
  prazoSignal: AbortSignal;
}

/** A call with the fields {@link withGrpcDeadline} sets, for annotating handlers. */
export type WithDeadline<Call> = Call & GrpcDeadlineFields;

/**
 * The grpc-js handler type of a wrapped handler: a handler written against `WithDeadline<Call>`
 * is registered as one taking the plain `Call` (the wrapper adds the fields).
 */
export type GrpcHandlerOf<H> = H extends (call: WithDeadline<infer Call>, ...rest: infer Rest) => unknown
  ? (call: Call, ...rest: Rest) => void
  : H;

/** What the wrapper needs of a grpc-js server call (all four kinds are event emitters). */
type ServerSurfaceCall = CallLike & EventEmitter;
type Callback = (error: unknown, ...rest: unknown[]) => void;
// biome-ignore lint/suspicious/noExplicitAny: grpc-js handler types are generic over any call type
type GrpcHandler = (call: any, callback?: any) => unknown;

/**
 * Wraps any grpc-js server handler (unary, streaming, bidi) so it runs inside the call's deadline
 * (SPEC D1, D2, D7): `call.getDeadline()` (and `x-deadline-epoch-ms` metadata, SPEC D8) capped by
 * `maxMs`, `defaultMs` when the call has none. `currentDeadline()` works in the handler and in
 * everything it awaits; `call.deadline` and `call.prazoSignal` are set. A call that arrives expired
 * is answered `DEADLINE_EXCEEDED` without running the handler; a deadline error the handler fails
 * with (callback, throw, rejection) is answered `DEADLINE_EXCEEDED` too, never UNKNOWN; one that
 * fails because a dependency failed is answered with a pushback (SPEC X6): `UNAVAILABLE` or
 * `DEADLINE_EXCEEDED` + `grpc-retry-pushback-ms: -1`.
 */
export function withGrpcDeadline<H extends GrpcHandler>(
  handler: H,
  options: GrpcDeadlineOptions = {},
): GrpcHandlerOf<H> {
  const o = readOptions('withGrpcDeadline', GRPC_DEADLINE_OPTIONS, options);
  const incoming = incomingDefaults(o, options);
  const pushback = o.pushback;
  const { clock } = incoming;
  const read = deadlineReader(incoming);
  if (typeof handler !== 'function') {
    throw new TypeError(`withGrpcDeadline(handler): handler must be a function, got ${typeof handler}`);
  }
  function wrapped(this: unknown, call: ServerSurfaceCall, callback?: Callback): void {
    if (callback === undefined) mapStreamErrors(call, pushback);
    const incoming = readCallDeadline(read, clock, call);
    const { deadline } = incoming;
    let settled = false;
    let release = (): void => undefined;
    const fail = (error: unknown): void => {
      release();
      if (callback === undefined) call.emit('error', error);
      else if (!settled) {
        settled = true;
        callback(toGrpcError(error, pushback));
      }
    };
    if (incoming.expired) {
      fail(new DeadlineExceededError({ dependency: 'incoming call', deadlineEpochMs: deadline.epochMs() }));
      return;
    }
    const armed = arm(clock, call, deadline, callback === undefined);
    release = armed.release;
    const done: Callback | undefined =
      callback &&
      ((error, ...rest) => {
        if (settled) return;
        settled = true;
        release();
        callback(error == null ? error : toGrpcError(error, pushback), ...rest);
      });
    const fields = call as ServerSurfaceCall & GrpcDeadlineFields;
    fields.deadline = deadline;
    fields.prazoSignal = armed.signal;
    runWithDeadline(deadline, () => {
      try {
        const result = done === undefined ? handler.call(this, call) : handler.call(this, call, done);
        if (result instanceof Promise) result.then(undefined, fail);
      } catch (error) {
        fail(error);
      }
    });
  }
  return wrapped as unknown as GrpcHandlerOf<H>;
}

/**
 * One timer per call, aborting the signal at the deadline; the call's `cancelled` aborts it too.
 * Released when the unary callback runs, or when a stream finishes, closes or errors.
 */
function arm(clock: Clock, call: ServerSurfaceCall, deadline: Deadline, stream: boolean) {
  const controller = new AbortController();
  const started = clock.now();
  const ends = stream ? ['finish', 'close', 'error'] : [];
  const release = (): void => {
    clock.clearTimer(timer);
    call.removeListener('cancelled', onCancelled);
    for (const name of ends) call.removeListener(name, release);
  };
  const onCancelled = (): void => {
    release();
    controller.abort(new DOMException('the call was cancelled', 'AbortError'));
  };
  const timer = clock.setTimer(
    () => {
      controller.abort(
        new DeadlineExceededError({ elapsedMs: clock.now() - started, deadlineEpochMs: deadline.epochMs() }),
      );
    },
    deadline.remainingMs(),
    { unref: true },
  );
  call.once('cancelled', onCancelled);
  for (const name of ends) call.once(name, release);
  return { signal: controller.signal, release };
}

/**
 * A streaming handler reports failure with `call.emit('error', e)` (or `destroy(e)`, which emits
 * it): grpc-js turns `e` into a status by its numeric `code`, and prazo's string codes would come
 * out as UNKNOWN. This call's own `emit` maps deadline errors to `DEADLINE_EXCEEDED` first.
 */
function mapStreamErrors(call: ServerSurfaceCall, pushback: boolean): void {
  const emit = call.emit;
  call.emit = function (this: ServerSurfaceCall, name: string | symbol, ...args: unknown[]): boolean {
    if (name === 'error') args[0] = toGrpcError(args[0], pushback);
    return emit.call(this, name, ...args);
  };
}
