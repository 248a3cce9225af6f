/**
 * `prazo/http`: an HTTP client on undici whose timeouts, deadlines and retries come from
 * measurement (SPEC C2, D4-D6, R2-R6, H1-H3). See docs/http.md.
 */

export { createHttpClient, type HttpClient, type HttpResponse } from './client.js';
export { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';
export type { HttpFetch, HttpFetchInit, HttpFetchInput } from './fetch.js';
export type { RequestHeaders } from './headers.js';
export { isReplayableBody } from './idempotency.js';
export type { HttpClientOptions, ResolvedHttpClientOptions } from './options.js';
export type { HttpRequestOptions } from './request.js';
export { statusOutcome } from './status.js';
