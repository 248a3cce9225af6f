/**
 * `prazo/server`: incoming deadlines for Express 4 and 5 (any Connect-style app) and `node:http`
 * (SPEC D2, D3, D7, D8), the pushback they answer when a handler's dependency failed (X6), and the
 * reader and the pushback answer they share, for any other server. Typed on `node:http` only:
 * an Express user compiles without fastify's types (the Fastify plugin is `prazo/fastify`).
 *
 * @module prazo/server
 */

export { DeadlineHeaders } from '../deadline/constants.js';
export {
  createDeadlineReader,
  type DeadlineSource,
  type IncomingDeadline,
  readIncomingDeadline,
} from '../deadline/headers.js';
export { type DependencyFailedDetails, DependencyFailedError } from '../errors/dependency.js';
export { isDependencyFailed } from '../errors/guards.js';
export type { DependencyFailure } from '../retry/pushback.js';
export {
  type CancelledEvent,
  createServerEventHub,
  defaultServerEvents,
  type FinishedEvent,
  type HandlerErrorEvent,
  onServerEvent,
  type PushbackEvent,
  type RejectedExpiredEvent,
  type ServerEvent,
  ServerEventHub,
  type ServerEventListener,
  type ServerFramework,
  type WastedWorkEvent,
} from './events.js';
export {
  type ConnectErrorMiddleware,
  type ConnectMiddleware,
  deadlineErrorHandler,
  deadlineMiddleware,
} from './express.js';
export type { DeadlineFields } from './fields.js';
export { type DeadlineHandler, withIncomingDeadline } from './node.js';
export { SERVER_DEADLINE_OPTIONS, type ServerDeadlineOptions } from './options.js';
export { PUSHBACK_OPTIONS, type PushbackAnswer, type PushbackSettings, pushbackAnswer } from './pushback.js';
export { type DeadlineErrorBody, isDeadlineError } from './respond.js';
export { createServerStats, type ServerStats } from './stats.js';
