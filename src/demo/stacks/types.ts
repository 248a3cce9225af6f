import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../clock/clock.js';
import type { CallTracer } from '../../dependency/trace.js';
import type { HopSettings } from '../types.js';

/**
 * What differs between the stacks compared by the demo: how a service calls the next hop, how it
 * admits a request, and what it answers when its own dependency failed. Everything else (roles,
 * pools, accounting) is the same code for all of them.
 */

/** A downstream answer. */
export interface HopResponse {
  readonly status: number;
  readonly body: string;
}

export interface HopClient {
  /** GET `path` on the next hop; `headers` are the demo's accounting headers, passed on unchanged. */
  get(path: string, headers: Record<string, string>, req: IncomingMessage): Promise<HopResponse>;
  close(): Promise<void>;
}

export interface HopClientOptions {
  /** The dependency's name (`orders`, `inventory`, `supplier`). */
  readonly name: string;
  /** Origin addressed (the dispatcher may route elsewhere: several instances). */
  readonly origin: string;
  /**
   * Every instance of the next hop, when it is several and the stack picks among them itself
   * ({@link Stack.picksInstances}): the dispatcher then only counts and sends where it is told.
   */
  readonly origins?: readonly string[];
  readonly dispatcher: Dispatcher;
  readonly hop: HopSettings;
  readonly clock: Clock;
  /** Called for each call the stack's client refuses locally (prazo's adaptive throttle). */
  readonly onThrottled?: () => void;
  /**
   * Records the client's calls as spans (issue #26: the report's trace waterfall), for a stack whose
   * client runs on prazo's executor (its tracing seam); the others' requests are recorded below them.
   */
  readonly tracer?: CallTracer;
}

/** A role's request handler: answers `res`; resolves when this service's work for it has ended. */
export type RoleHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface ServeOptions {
  readonly clock: Clock;
  /** prazo only: the deadline of a request that brings none, and the local ceiling (D2). */
  readonly deadline?: { readonly defaultMs: number; readonly maxMs: number };
}

/** How a service answers when its call to the next hop failed. */
export interface FailureAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
}

export interface Stack {
  /**
   * The stack's client chooses the instance of each attempt itself (prazo: `origins`, SPEC X5). The
   * others get a round robin below them, like a Kubernetes Service.
   */
  readonly picksInstances?: boolean;
  client(options: HopClientOptions): HopClient;
  /** Turns a role handler into the server's listener (prazo: reads and enforces the deadline). */
  serve(handler: RoleHandler, options: ServeOptions): RequestListener;
  /**
   * The answer for a failed downstream call (a thrown error, or `{ status }` for a non-200 answer of
   * the hop `dependency`), to the request `req`.
   */
  failure(
    cause: unknown,
    options: { readonly dependency: string; readonly req: IncomingMessage },
  ): FailureAnswer;
}
