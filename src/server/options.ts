import type { Clock } from '../clock/clock.js';
import {
  deadlineReader,
  type HeadersLike,
  INCOMING_DEADLINE_OPTIONS,
  type IncomingDeadline,
  incomingDefaults,
} from '../deadline/headers.js';
import { defineOptions, type OptionsOf, option } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import {
  defaultServerEvents,
  type ServerEventHub,
  type ServerEventListener,
  type ServerFramework,
} from './events.js';
import { PUSHBACK_OPTIONS, type PushbackSettings } from './pushback.js';

/**
 * Options shared by `deadlineMiddleware`, `fastifyDeadline` and `withIncomingDeadline`, declared once:
 * the incoming-deadline options (`defaultMs`, `maxMs`, `clockSkewMs`, `clock`) and the service's
 * `name` — the config's `service` section, so `deadlineMiddleware(config.service)` takes it as it is
 * (#26) — where the events go, and the pushback of a dependency's failure. Validated once, when the
 * middleware is built; every problem is reported together, an unknown key with a "did you mean"
 * (`maxMS` would otherwise leave the 10 s default cap in force).
 */
export const SERVER_DEADLINE_OPTIONS = defineOptions(
  {
    /**
     * The service's name, as the config's `service.name` gives it. Accepted so that the config's
     * `service` block is these options as it is; the middleware itself does not use it.
     */
    name: option.string(),
    ...INCOMING_DEADLINE_OPTIONS.specs,
    /** Called with every event of this middleware (in addition to the hub). Default: none. */
    onEvent: option.fn<ServerEventListener>(),
    /** The hub to publish events to. Default: the process-wide one (`onServerEvent`). */
    events: option.value<ServerEventHub>(
      'a ServerEventHub (from createServerEventHub)',
      option.hasMethods('onServerEvent', 'emit'),
    ),
    /**
     * Retry at one layer (SPEC X6): a handler that fails because one of its dependencies failed (a
     * prazo deadline, timeout, connect, budget or DependencyFailedError, on the error or its `cause`
     * chain) is answered `503` (dependency down or failing) or `504` (time ran out) with
     * `grpc-retry-pushback-ms: -1` and a `Retry-After`, so its callers do not retry what was already
     * retried next to the failure. `true` (the default) or `{ retryAfterS }`; `false` answers as
     * before (deadline errors 504, others as the framework does).
     */
    pushback: option.toggle(PUSHBACK_OPTIONS),
  },
  (values, report, context) => INCOMING_DEADLINE_OPTIONS.check(values, report, context),
);

export type ServerDeadlineOptions = OptionsOf<typeof SERVER_DEADLINE_OPTIONS>;

/** Options after validation: what a request needs on the hot path. */
export interface ResolvedServerOptions {
  readonly framework: ServerFramework;
  readonly clock: Clock;
  readonly read: (headers: HeadersLike) => IncomingDeadline;
  readonly events: ServerEventHub;
  readonly onEvent: ServerEventListener | undefined;
  /** How a dependency failure is answered (SPEC X6); undefined: pushback is off. */
  readonly pushback: PushbackSettings | undefined;
}

/** Validates `options` once for `context` (the public function's name); throws one InvalidOptionsError. */
export function resolveServerOptions(
  context: string,
  framework: ServerFramework,
  options: ServerDeadlineOptions = {},
): ResolvedServerOptions {
  const o = readOptions(context, SERVER_DEADLINE_OPTIONS, options);
  const incoming = incomingDefaults(o, options);
  return {
    framework,
    clock: incoming.clock,
    read: deadlineReader(incoming),
    events: o.events ?? defaultServerEvents,
    onEvent: o.onEvent,
    pushback:
      o.pushback === false ? undefined : o.pushback === true || o.pushback === undefined ? {} : o.pushback,
  };
}
