import type { Attributes } from '@opentelemetry/api';
import type { Disposable } from '../dependency/types.js';
import { ATTR, MS_PER_S } from './constants.js';
import type { PrazoInstruments } from './instruments.js';

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
    if (event.type === 'wasted-work') {
      I.wastedWork.add(1, attributes);
      const elapsed = event.elapsedMs;
      if (typeof elapsed === 'number' && elapsed >= 0 && Number.isFinite(elapsed)) {
        I.wastedWorkTime.add(elapsed / MS_PER_S, attributes);
      }
    } else if (event.type === 'rejected-expired') {
      I.rejectedExpired.add(1, attributes);
    }
  });
}
