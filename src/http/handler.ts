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
export type DispatchHandler = Dispatcher.DispatchHandler;
export type Dispatch = Dispatcher['dispatch'];
export type ResponseHeaders = IncomingHttpHeaders;

/** True for a handler on the current API (what undici 7 and 8 call `onRequestStart` on). */
export function speaksCurrentApi(handler: DispatchHandler): boolean {
  return typeof handler.onRequestStart === 'function';
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
