/**
 * `prazo/http`: calls over HTTP whose timeouts, deadlines and retries come from measurement (SPEC C2,
 * D4-D6, R1-R6, H1-H3, X4). Three ways in, one machinery: `interceptor()` for the undici stack a
 * service already has (an `Agent`, the global dispatcher behind Node's `fetch`), or
 * `createHttpClient()`, a client of its own for one dependency. See docs/http.md.
 */

export type { InstanceState } from '../balance/instances.js';
export { NoInstanceError } from '../errors/capacity.js';
export { isNoInstance } from '../errors/guards.js';
export { createHttpClient, type HttpClient } from './client.js';
export { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';
export type { HttpFetch, HttpFetchInit, HttpFetchInput } from './fetch.js';
export type { RequestHeaders } from './headers.js';
export { type DependencyView, interceptor, type PrazoInterceptor } from './interceptor.js';
export type {
  HttpClientBaseOptions,
  HttpClientOptions,
  HttpDependencyOptions,
  InterceptorOptions,
  OwnExecutorOptions,
  ResolvedHttpClientOptions,
  SharedExecutorOptions,
} from './options.js';
export type { CallOptions, HttpRequestOptions, HttpResponse } from './request.js';
export { isReplayableBody } from './route.js';
export type {} from './undici-augment.js';
export { statusOutcome } from './verdict.js';
