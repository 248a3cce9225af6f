import type { DeadlineSource } from '../deadline/headers.js';
import type { Disposable } from '../dependency/types.js';

/**
 * What the server side of prazo reports (SPEC D2, D7), for the metrics issue to turn into counters
 * and histograms. Two numbers matter most in an incident:
 * - requests refused because they arrived already expired (work that was correctly never started);
 * - **wasted work**: responses finished after their deadline, when the caller had already given up.
 *   Their count and overrun (ms) say how much capacity a slow path burns for nobody.
 */

/** Which integration produced the event. */
export type ServerFramework = 'node' | 'express' | 'fastify';

interface EventBase {
  readonly framework: ServerFramework;
  readonly method: string;
  /** Which header decided the request's deadline. */
  readonly source: DeadlineSource;
}

/** The request arrived with its deadline gone: answered 504 without running the handler. */
export interface RejectedExpiredEvent extends EventBase {
  readonly type: 'rejected-expired';
}

/** The request's signal fired while the response was not finished. */
export interface CancelledEvent extends EventBase {
  readonly type: 'cancelled';
  readonly reason: 'deadline' | 'client-disconnect';
  /** Time since the request was admitted, in ms. */
  readonly elapsedMs: number;
}

/** A response finished (every admitted request that completes produces one). */
export interface FinishedEvent extends EventBase {
  readonly type: 'finished';
  readonly statusCode: number;
  readonly elapsedMs: number;
  /** The time the request was given on admission (after the local cap), in ms. */
  readonly budgetMs: number;
  /** How far past the deadline the response finished, in ms; 0 when in time. */
  readonly overrunMs: number;
}

/** A response finished after its deadline (emitted right after its `finished` event). */
export interface WastedWorkEvent extends EventBase {
  readonly type: 'wasted-work';
  readonly statusCode: number;
  readonly elapsedMs: number;
  /** How far past the deadline, in ms; always > 0. */
  readonly overrunMs: number;
}

/** A `node:http` handler wrapped by `withIncomingDeadline` threw or rejected. */
export interface HandlerErrorEvent extends EventBase {
  readonly type: 'handler-error';
  readonly error: unknown;
  /** The status answered (504 for deadline errors, 500 otherwise), or 0 when headers were already sent. */
  readonly statusCode: number;
}

/**
 * A handler failed because one of its dependencies did, and was answered with a pushback (SPEC X6):
 * `503`/`504` + `grpc-retry-pushback-ms: -1`, so its callers do not retry it.
 */
export interface PushbackEvent extends EventBase {
  readonly type: 'pushback';
  /** 504 (time ran out) or 503 (a dependency down or failing). */
  readonly statusCode: number;
  /** The prazo error code recognised (DEADLINE_INSUFFICIENT, CONNECT_FAILED, DEPENDENCY_FAILED, ...). */
  readonly code: string;
}

export type ServerEvent =
  | RejectedExpiredEvent
  | PushbackEvent
  | CancelledEvent
  | FinishedEvent
  | WastedWorkEvent
  | HandlerErrorEvent;

export type ServerEventListener = (event: ServerEvent) => void;

/**
 * A tiny synchronous fan-out. Listeners run in subscription order; one that throws does not stop
 * the others nor break the request (its error is reported with `process.emitWarning`).
 */
export class ServerEventHub {
  #listeners: readonly ServerEventListener[] = [];

  /** True when someone listens: emitters skip building events otherwise. */
  get active(): boolean {
    return this.#listeners.length > 0;
  }

  /** Subscribes; `dispose()` unsubscribes (idempotent). */
  onServerEvent(listener: ServerEventListener): Disposable {
    this.#listeners = [...this.#listeners, listener];
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        this.#listeners = this.#listeners.filter((l) => l !== listener);
      },
    };
  }

  emit(event: ServerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(`prazo: a server event listener threw: ${String(error)}`, 'PrazoWarning');
      }
    }
  }
}

/** The process-wide hub every server integration publishes to unless given its own `events`. */
export const defaultServerEvents = new ServerEventHub();

/** Subscribes to the process-wide server events (see {@link defaultServerEvents}). */
export function onServerEvent(listener: ServerEventListener): Disposable {
  return defaultServerEvents.onServerEvent(listener);
}

/** A hub of one's own (one per server, or per test), to pass as the `events` option. */
export function createServerEventHub(): ServerEventHub {
  return new ServerEventHub();
}
