import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Timer } from '../clock/clock.js';
import { runWithDeadline } from '../deadline/ambient.js';
import type { Deadline } from '../deadline/deadline.js';
import {
  deadlineReader,
  INCOMING_DEADLINE_OPTIONS,
  type IncomingDeadline,
  incomingDefaults,
} from '../deadline/headers.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { toConnectServerError } from './status.js';

/**
 * Options of {@link connectServerInterceptor}, declared once: the incoming-deadline options every
 * prazo server shares (`defaultMs`, `maxMs`, `clockSkewMs`, `clock`) and the service's `name` — the
 * config's `service` block as it is — and the pushback of a dependency's failure.
 */
export const CONNECT_SERVER_OPTIONS = defineOptions(
  {
    /** The service's name, as the config's `service.name` gives it; not used by the interceptor. */
    name: option.string(),
    ...INCOMING_DEADLINE_OPTIONS.specs,
    /**
     * Retry at one layer (SPEC X6): a handler that fails because one of its dependencies failed is
     * answered `deadline_exceeded` or `unavailable` with `grpc-retry-pushback-ms: -1`, so its callers
     * do not retry what this hop already retried. Default true.
     */
    pushback: option.boolean({ default: true }),
    /**
     * Called with each request's incoming deadline (which header decided it, capped or not, expired)
     * before its handler runs or is refused: for logs and traces. Default: none.
     */
    onDeadline: option.fn<(incoming: IncomingDeadline, procedure: string) => void>(),
  },
  (values, report, context) => INCOMING_DEADLINE_OPTIONS.check(values, report, context),
);

export type ConnectServerOptions = OptionsOf<typeof CONNECT_SERVER_OPTIONS>;

/**
 * A Connect-ES server interceptor (SPEC D2, D3, D7, D8, X6): `connectNodeAdapter({ routes,
 * interceptors: [connectServerInterceptor({ maxMs: 5000 })] })`, or any router's `interceptors`
 * (Fastify's, Express's, Next.js's Connect adapters alike).
 *
 * - The request's deadline is read from every form prazo knows — `connect-timeout-ms` (Connect),
 *   `grpc-timeout` (gRPC, gRPC-web), `x-deadline-epoch-ms`, Envoy's — the earliest wins, capped at
 *   `maxMs`, `defaultMs` when none.
 * - A request that arrives with its deadline gone is answered `deadline_exceeded` and its handler
 *   never runs.
 * - The handler runs with that deadline ambient (`currentDeadline()`: prazo's clients under it —
 *   prazo/http, prazo/connect's client interceptor, prazo/grpc, the stores — inherit it), and its
 *   context's `signal` also aborts at it (a deadline capped by `maxMs`, or one only prazo's header
 *   carried, is earlier than Connect's own timeout).
 * - A handler failing because a dependency did is answered with a pushback (option `pushback`); a
 *   prazo deadline error `deadline_exceeded`.
 */
export function connectServerInterceptor(options: ConnectServerOptions = {}): Interceptor {
  const o = readOptions('connectServerInterceptor', CONNECT_SERVER_OPTIONS, options);
  const resolved = incomingDefaults(o, options);
  const read = deadlineReader(resolved);
  const { clock } = resolved;
  const { pushback, onDeadline } = o;
  return (next) => async (req) => {
    const incoming = read(req.header);
    onDeadline?.(incoming, `/${req.service.typeName}/${req.method.name}`);
    if (incoming.expired) {
      throw new ConnectError(
        `prazo: the request arrived past its deadline (${incoming.source}), not run`,
        Code.DeadlineExceeded,
      );
    }
    // The handler's signal: Connect's own (its timeout, the client going away, the server shutting
    // down) or this deadline, whichever first. One timer, cleared when the call is over.
    const controller = new AbortController();
    const stop = (): void => {
      release();
      controller.abort(req.signal.reason);
    };
    let timer: Timer | undefined = clock.setTimer(
      () => {
        timer = undefined;
        release();
        controller.abort(new ConnectError('prazo: the request deadline passed', Code.DeadlineExceeded));
      },
      incoming.deadline.remainingMs(),
      { unref: true },
    );
    const release = (): void => {
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
      req.signal.removeEventListener('abort', stop);
    };
    if (req.signal.aborted) stop();
    else req.signal.addEventListener('abort', stop, { once: true });
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await runWithDeadline(incoming.deadline, () => next({ ...req, signal: controller.signal }));
    } catch (error) {
      release();
      throw toConnectServerError(error, pushback);
    }
    if (!res.stream) {
      release();
      return res;
    }
    return { ...res, message: guarded(res.message, incoming.deadline, release, pushback) };
  };
}

/**
 * A response stream run under the deadline: a streaming handler's body runs as its messages are
 * read, so each read is made inside the deadline (else the ambient one would be lost after the
 * handler's first await). Its end or failure releases the call's timer; failures answered as prazo's.
 */
async function* guarded<T>(
  messages: AsyncIterable<T>,
  deadline: Deadline,
  release: () => void,
  pushback: boolean,
): AsyncIterable<T> {
  const it = messages[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await runWithDeadline(deadline, () => it.next());
      if (step.done === true) return;
      yield step.value;
    }
  } catch (error) {
    throw toConnectServerError(error, pushback);
  } finally {
    release();
  }
}
