/**
 * `prazo/grpc`: deadlines across gRPC hops with @grpc/grpc-js (an optional peer) (SPEC D1, D2, D4,
 * D7, D8) and pushback (X6). Client: `deadlineInterceptor` (its own thin path, or each call through
 * an executor: `{ dependency }`). Server: `withGrpcDeadline`.
 *
 * @module prazo/grpc
 */

export {
  DEADLINE_INTERCEPTOR_OPTIONS,
  type DeadlineInterceptor,
  type DeadlineInterceptorOptions,
  deadlineInterceptor,
} from './client.js';
export {
  GRPC_DEADLINE_OPTIONS,
  type GrpcDeadlineFields,
  type GrpcDeadlineOptions,
  type GrpcHandlerOf,
  type WithDeadline,
  withGrpcDeadline,
} from './server.js';
export {
  deadlineStatus,
  type PrazoStatusObject,
  prazoErrorOf,
  toGrpcError,
} from './status.js';
