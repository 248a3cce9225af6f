import type { CallOptions } from './request.js';

/**
 * Types the per-call options of prazo's interceptor where undici users write them: every dispatch
 * option object (`request`, `stream`, `pipeline`, `dispatch` and their `RequestOptions`) takes
 * `prazo: { deadline, idempotent, idempotencyKey, responseTimeoutMs, bodyTimeoutMs,
 * retryResponseTimeout }`. Without it, tsc refuses `request(url, { dispatcher, prazo: { deadline: 800 } })`
 * (TS2353), and the `as any` that gets past it lets a typo through to run time; with it, a typo is a
 * compile error with tsc's "did you mean".
 *
 * An augmentation, as undici's own ecosystem does it (and as prazo/fastify types `request.deadline`):
 * it applies once `prazo/http` is imported, to the undici the project resolves (7 or 8). Types only:
 * this module has no run-time content.
 */
declare module 'undici' {
  namespace Dispatcher {
    interface DispatchOptions {
      /** prazo/http's per-call options, read by its interceptor (docs/http.md). */
      prazo?: CallOptions;
    }
  }
}
