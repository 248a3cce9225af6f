import type { Disposable } from '../dependency/types.js';
import { defaultServerEvents, type ServerEventHub } from './events.js';

/** Running totals of a hub's events: what a dashboard (or a test) wants to read at a glance. */
export interface ServerStats extends Disposable {
  /** Requests whose response finished. */
  readonly finished: number;
  /** Requests refused with 504 because they arrived expired (no work done). */
  readonly rejectedExpired: number;
  /** Responses finished after their deadline (wasted work), and by how much in total, in ms. */
  readonly wasted: number;
  readonly wastedMs: number;
  /** Signals fired at the deadline, and on client disconnect. */
  readonly cancelledByDeadline: number;
  readonly cancelledByDisconnect: number;
  readonly handlerErrors: number;
}

/** Counts the events of `hub` (default: the process-wide one) until `dispose()`. */
export function createServerStats(hub: ServerEventHub = defaultServerEvents): ServerStats {
  const stats = {
    finished: 0,
    rejectedExpired: 0,
    wasted: 0,
    wastedMs: 0,
    cancelledByDeadline: 0,
    cancelledByDisconnect: 0,
    handlerErrors: 0,
    dispose: (): void => subscription.dispose(),
  };
  const subscription = hub.onServerEvent((event) => {
    switch (event.type) {
      case 'finished':
        stats.finished += 1;
        break;
      case 'rejected-expired':
        stats.rejectedExpired += 1;
        break;
      case 'wasted-work':
        stats.wasted += 1;
        stats.wastedMs += event.overrunMs;
        break;
      case 'cancelled':
        if (event.reason === 'deadline') stats.cancelledByDeadline += 1;
        else stats.cancelledByDisconnect += 1;
        break;
      case 'handler-error':
        stats.handlerErrors += 1;
        break;
    }
  });
  return stats;
}
