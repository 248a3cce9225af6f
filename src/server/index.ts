/**
 * `prazo/server`: incoming deadlines for Express 5, Fastify 5 and `node:http` (SPEC D2, D3, D7, D8).
 * express and fastify are optional peers: only their types are imported here.
 */
export { CLIENT_DISCONNECT_MESSAGE, EXPIRED_STATUS_CODE } from './constants.js';
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
export { fastifyDeadline } from './fastify.js';
export type { DeadlineFields } from './fields.js';
export { type DeadlineHandler, withIncomingDeadline } from './node.js';
export type { ServerDeadlineOptions } from './options.js';
export { type DeadlineErrorBody, isDeadlineError } from './respond.js';
export { createServerStats, type ServerStats } from './stats.js';
