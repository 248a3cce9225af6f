import { Dispatcher } from 'undici';
import type { Attempt, UndiciHandler } from './attempt.js';

/**
 * How an {@link Attempt} gets between undici's request API and the dispatcher, without composing
 * interceptors: undici's `compose` puts a Proxy in front of the dispatcher and wraps every handler
 * twice (new API ⇄ legacy API) on every call. Here undici's own `request` runs against a tiny shim
 * whose `dispatch` slips the attempt in as the handler, then forwards to the real dispatcher: the
 * response, its body stream and undici's errors are exactly those of `undici.request`.
 */

const kAttempt = Symbol('prazo.attempt');

/** undici's request options plus the attempt riding along (read synchronously by the shim). */
export type DispatchRequest = Dispatcher.RequestOptions & { [kAttempt]?: Attempt };

type Send = (options: DispatchRequest, attempt: Attempt) => Promise<Dispatcher.ResponseData>;

const requestApi = Dispatcher.prototype.request as unknown as (
  this: unknown,
  options: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

/** Sends one attempt through `dispatcher` with undici's request semantics. */
export function createSend(dispatcher: Dispatcher): Send {
  const shim = {
    dispatch(options: DispatchRequest, handler: UndiciHandler): boolean {
      const attempt = options[kAttempt]!;
      attempt.inner = handler;
      const more = dispatcher.dispatch(options, attempt as unknown as Dispatcher.DispatchHandler);
      attempt.dispatched();
      return more;
    },
  };
  return (options, attempt) => {
    options[kAttempt] = attempt;
    return requestApi.call(shim, options);
  };
}
