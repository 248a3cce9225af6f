import { type Attributes, trace } from '@opentelemetry/api';
import type { IncomingDeadline } from '../deadline/headers.js';
import type { Disposable } from '../dependency/types.js';
import { type AdmittedHook, setAdmittedHook } from '../server/admitted.js';
import { ATTR, MS_PER_S, SPAN_ATTR } from './constants.js';
import type { PrazoInstruments } from './instruments.js';
import { setTimeLeft } from './traces.js';

/**
 * Server-side metrics (SPEC D2, D7): requests refused because they arrived expired (work correctly
 * never started) and **wasted work**, responses finished after their deadline, when the caller had
 * already given up. The second is what a deadline exists to drive to zero; the first is the price.
 */

/** The part of a server event prazo/otel reads (`prazo/server`'s `ServerEvent` satisfies it). */
export interface ServerEventLike {
  readonly type: string;
  /** Time since the request was admitted, in ms (on `wasted-work`). */
  readonly elapsedMs?: number;
}

/** A source of server events: `prazo/server`'s `ServerEventHub` (or `defaultServerEvents`). */
export interface ServerEventSource {
  onServerEvent(listener: (event: ServerEventLike) => void): Disposable;
}

/** One server to observe, under a name (the `prazo.server` attribute). */
export interface InstrumentableServer {
  /** Default `'default'`. */
  readonly name?: string;
  readonly events: ServerEventSource;
}

export const DEFAULT_SERVER_NAME = 'default';

export function recordServerEvents(instruments: PrazoInstruments, server: InstrumentableServer): Disposable {
  const attributes: Attributes = Object.freeze({ [ATTR.server]: server.name ?? DEFAULT_SERVER_NAME });
  const I = instruments;
  return server.events.onServerEvent((event) => {
    try {
      if (event.type === 'wasted-work') {
        I.wastedWork.add(1, attributes);
        const elapsed = event.elapsedMs;
        if (typeof elapsed === 'number' && elapsed >= 0 && Number.isFinite(elapsed)) {
          I.wastedWorkTime.add(elapsed / MS_PER_S, attributes);
        }
      } else if (event.type === 'rejected-expired') {
        I.rejectedExpired.add(1, attributes);
      }
    } catch {
      // A meter that throws loses the metric, never the request (nor a warning per request).
    }
  });
}

/**
 * Records each request's incoming deadline on the span active when prazo/server admits it (the
 * server span of `@opentelemetry/instrumentation-http`, or the user's own): the header it came from
 * (`prazo.deadline.source`), the time left (`prazo.deadline.time_left_ms`) and whether the local
 * maximum cut it (`prazo.deadline.capped`). No active span: nothing.
 */
export function traceServer(events: ServerEventSource): Disposable {
  const hook = (incoming: IncomingDeadline, remainingMs: number): void => {
    try {
      const span = trace.getActiveSpan();
      if (span === undefined || !span.isRecording()) return;
      const attributes: Attributes = {
        [SPAN_ATTR.serverSource]: incoming.source,
        [SPAN_ATTR.serverCapped]: incoming.capped,
      };
      setTimeLeft(attributes, remainingMs);
      span.setAttributes(attributes);
    } catch {
      // The application's span (or context manager) threw: the attributes are lost, the request is
      // admitted as always, without a process warning per request.
    }
  };
  const hooks = installedHooks.get(events) ?? [];
  installedHooks.set(events, hooks);
  hooks.push(hook);
  setAdmittedHook(events, hook);
  return {
    dispose: () => {
      const at = hooks.indexOf(hook);
      if (at < 0) return;
      const wasInForce = at === hooks.length - 1;
      hooks.splice(at, 1);
      if (wasInForce) setAdmittedHook(events, hooks.at(-1));
    },
  };
}

/**
 * The hooks installed per hub, oldest first: a hub has one hook slot, so the newest is in force and
 * its removal puts back the one before (removing it outright left an older instrumentation of the
 * same hub without its server spans' deadline attributes for good).
 */
const installedHooks = new WeakMap<object, AdmittedHook[]>();
