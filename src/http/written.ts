import diagnostics from 'node:diagnostics_channel';

/**
 * Relative deadline headers (`grpc-timeout`, `x-envoy-expected-rq-timeout-ms`) valued when the
 * request is written, not when it is dispatched (SPEC D5, D8). A request can wait for a pooled
 * connection or for a connect; a relative value computed before that wait tells the next hop it has
 * the wait's worth of time more than the caller does.
 *
 * undici turns a request's headers into its own list when it builds the request (at dispatch, or
 * when a queued request gets a connection) and writes that list after the handler's
 * `onRequestStart`. So the headers are handed over as an iterable of pairs (a form undici accepts):
 * its values are computed as undici reads them, and the end of the iteration marks the request
 * undici is building; its `undici:request:create` diagnostics message then hands that request's list
 * to the attempt, which rewrites the values in `onRequestStart`, the instant before the write.
 * Nothing subscribes to the channel until a client or interceptor sends relative headers.
 */

/** What the iterable asks of its attempt. */
export interface WrittenHeadersOwner {
  /** The relative values now: `[name, value, ...]`, in the order given at construction. */
  relativeHeaders(): readonly string[];
  /** The list undici built from these headers, and where the relative pairs start in it. */
  linkHeaders(list: string[], at: number): void;
}

let building: WrittenHeaders | undefined;
let subscribed = false;

interface CreateMessage {
  readonly request?: { readonly headers?: unknown };
}

function onCreate(message: unknown): void {
  const headers = building;
  if (headers === undefined) return;
  building = undefined;
  const list = (message as CreateMessage).request?.headers;
  if (Array.isArray(list)) headers.link(list as string[]);
}

function subscribe(): void {
  if (subscribed) return;
  subscribed = true;
  diagnostics.subscribe('undici:request:create', onCreate);
}

/** The caller's headers (flat pairs, yielded as they are) followed by the relative deadline pairs. */
export class WrittenHeaders implements Iterable<[string, string]> {
  readonly #base: readonly string[];
  readonly #owner: WrittenHeadersOwner;
  #yielded: readonly string[] = [];

  constructor(base: readonly string[], owner: WrittenHeadersOwner) {
    subscribe();
    this.#base = base;
    this.#owner = owner;
  }

  *[Symbol.iterator](): Iterator<[string, string]> {
    building = undefined;
    const base = this.#base;
    for (let i = 0; i + 1 < base.length; i += 2) yield [base[i]!, base[i + 1]!];
    const relative = this.#owner.relativeHeaders();
    this.#yielded = relative;
    for (let i = 0; i + 1 < relative.length; i += 2) yield [relative[i]!, relative[i + 1]!];
    building = this; // the request undici is building now is announced next
  }

  /** undici built `list` from these pairs: the relative ones are its last entries, if they are there. */
  link(list: string[]): void {
    const yielded = this.#yielded;
    const at = list.length - yielded.length;
    if (at < 0) return;
    for (let i = 0; i < yielded.length; i += 1) if (list[at + i] !== yielded[i]) return;
    this.#owner.linkHeaders(list, at);
  }
}
