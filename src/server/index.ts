/**
 * `prazo/server`: incoming deadlines for Express 4 and 5 (any Connect-style app) and `node:http`
 * (SPEC D2, D3, D7, D8), and the reader they share for any other server. Typed on `node:http` only:
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
export {
  type CancelledEvent,
  createServerEventHub,
  defaultServerEvents,
  type FinishedEvent,
  type HandlerErrorEvent,
  onServerEvent,
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
export { type DeadlineErrorBody, isDeadlineError } from './respond.js';
export { createServerStats, type ServerStats } from './stats.js';
