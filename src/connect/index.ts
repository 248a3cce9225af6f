/**
 * `prazo/connect`: deadlines, budgets and retries for Connect RPC (`@connectrpc/connect` 2, an
 * optional peer) over its three protocols, Connect, gRPC and gRPC-web (SPEC D1-D8, R1-R6, H1, X6).
 * Client: `connectClientInterceptor({ dependency })` on a transport. Server:
 * `connectServerInterceptor(options)` on a router. See docs/connect.md.
 *
 * @module prazo/connect
 */

export {
  CONNECT_CLIENT_OPTIONS,
  type ConnectClientOptions,
  connectClientInterceptor,
  isIdempotentProcedure,
} from './client.js';
export { CONNECT_SERVER_OPTIONS, type ConnectServerOptions, connectServerInterceptor } from './server.js';
export { toConnectError, toConnectServerError } from './status.js';
