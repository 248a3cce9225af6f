import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/**
 * The shapes prazo/http plugs into, from undici's dispatcher API. An attempt speaks undici's current
 * handler API (`onRequestStart(controller)`, `onResponseStart`, `onResponseData`, `onResponseEnd`,
 * `onResponseError`), which undici 7 and 8 both speak. The handler *above* a call may still speak
 * the legacy one (`onConnect`, `onHeaders`, `onData`, `onComplete`, `onError`): undici 7's own
 * `request()`, and the fetch of the undici bundled in Node 20 and 22 when it reaches an undici 8
 * dispatcher directly (`fetch(url, { dispatcher })`). A call answers either, without a wrapper.
 */

export type DispatchOptions = Dispatcher.DispatchOptions;
export type DispatchController = Dispatcher.DispatchController;
/**
 * undici's legacy handler callbacks, which undici 7's types declare on `DispatchHandler` and
 * undici 8's no longer do: a handler above a call may still carry them (see above).
 */
export interface LegacyHandlerMethods {
  onConnect?(abort: (reason?: Error) => void, context?: object): void;
  onError?(error: Error): void;
  onUpgrade?(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void;
  onHeaders?(
    statusCode: number,
    headers: Buffer[],
    resume: () => void,
    statusText: string,
  ): boolean | undefined;
  onData?(chunk: Buffer): boolean | undefined;
  onComplete?(trailers: string[] | null): void;
  onBodySent?(chunkSize: number, totalBytesSent: number): void;
}

/** A handler as undici's types say (7 or 8), with the legacy callbacks it may also carry. */
export type DispatchHandler = Dispatcher.DispatchHandler & LegacyHandlerMethods;
export type Dispatch = Dispatcher['dispatch'];
export type ResponseHeaders = IncomingHttpHeaders;

/**
 * True for a handler to be spoken to on the current API (what undici 7 and 8 call `onRequestStart`
 * on). Not undici's `WrapHandler`, the current-API face `compose` puts on a legacy handler (that of
 * `undici.request`, `stream`, `fetch`): it passes the legacy callbacks straight through, while its
 * `onResponseStart` rebuilds raw header buffers from the parsed object (two `Buffer.from` a header,
 * ~1.1 kB a response). Spoken to on the legacy API, it gets the raw buffers undici already holds.
 */
export function speaksCurrentApi(handler: DispatchHandler): boolean {
  if (typeof handler.onRequestStart !== 'function') return false;
  return !(typeof handler.onHeaders === 'function' && handler.constructor?.name === 'WrapHandler');
}

/**
 * What the dispatch functions prazo sends attempts with are known to reach. undici 7's core (Agent,
 * Pool, Client) speaks the legacy API and wraps a current-API handler in an `UnwrapHandler`, which
 * parses the response head into an object; the legacy handler above the call (undici 7's `request()`,
 * `fetch`) then parses it again from the raw buffers. An attempt sent there speaks the legacy API
 * itself, as undici's own `request()` does (`LegacyFace`, attempt.ts): undici parses nothing for it,
 * and prazo parses the head only when it reads a header (a failed status).
 *
 * Only a dispatch that may go straight to undici's core is considered ({@link mayReachCore}: a pool
 * of prazo's, a dispatcher whose `dispatch` is undici's own, the dispatch `compose` hands its
 * innermost interceptor); its first attempt, sent on the current API, tells: undici 7's unwrap
 * controller (true), anything else (false: undici 8, a dispatcher of the caller's own). null: not
 * known yet.
 */
const cores = new WeakMap<Dispatch, boolean | null>();

/** `dispatch` may reach undici's core directly: its first attempt tells whether it speaks legacy. */
export function mayReachCore(dispatch: Dispatch): Dispatch {
  if (!cores.has(dispatch)) cores.set(dispatch, null);
  return dispatch;
}

/** True when `dispatch` reaches undici 7's legacy core; undefined while its first attempt has not told. */
export function reachesLegacyCore(dispatch: Dispatch): boolean | undefined {
  const known = cores.get(dispatch);
  return known === null ? undefined : known === true;
}

/** What `controller`, handed to the first attempt sent with `dispatch`, says of it. */
export function learnCore(dispatch: Dispatch, controller: DispatchController): void {
  cores.set(dispatch, controller.constructor?.name === 'UnwrapController');
}

/**
 * A legacy attempt sent with `dispatch` was started by something other than undici's core (whose
 * `abort` is its own function of that name): a wrapper sits in between (a `compose` below, undici's
 * `WrapHandler` rebuilding each head). Its attempts go on the current API again.
 */
export function checkCore(dispatch: Dispatch, abort: (reason?: Error) => void): void {
  if (abort.name !== 'abort') cores.set(dispatch, false);
}

/**
 * The raw `[name, value, ...]` buffers a legacy handler expects: the controller's own when undici
 * kept them (7's unwrap controller, 8's request controller), else rebuilt from the parsed object.
 */
export function rawHeaders(
  kept: DispatchController['rawHeaders'] | undefined,
  headers: ResponseHeaders | undefined,
): Buffer[] {
  if (Array.isArray(kept)) return kept as Buffer[];
  const raw: Buffer[] = [];
  if (headers === undefined) return raw;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value))
      for (const v of value) raw.push(Buffer.from(name, 'latin1'), Buffer.from(v, 'latin1'));
    else raw.push(Buffer.from(name, 'latin1'), Buffer.from(String(value), 'latin1'));
  }
  return raw;
}
