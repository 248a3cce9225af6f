import { once } from 'node:events';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { create, createFileRegistry, type DescMethodUnary, type DescService } from '@bufbuild/protobuf';
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptions_IdempotencyLevel,
} from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, Interceptor, Transport } from '@connectrpc/connect';
import {
  connectNodeAdapter,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from '@connectrpc/connect-node';

/**
 * A tiny Connect service for the tests, defined without code generation: its descriptor is written
 * here as a `FileDescriptorProto` and read with @bufbuild/protobuf v2's `createFileRegistry`, the
 * runtime path generated code takes too. Servers on 127.0.0.1 only.
 *
 * `prazo.test.v1.EchoService`: `Get` (NO_SIDE_EFFECTS), `Put` (IDEMPOTENT), `Charge` (no level: not
 * idempotent), each `EchoRequest { text, delay_ms }` → `EchoResponse { text, left_ms, attempt }`;
 * `Watch` (server streaming, NO_SIDE_EFFECTS).
 */

const { STRING, INT32, DOUBLE } = FieldDescriptorProto_Type;
const OPTIONAL = FieldDescriptorProto_Label.OPTIONAL;
const field = (name: string, number: number, type: FieldDescriptorProto_Type, jsonName: string) => ({
  name,
  number,
  type,
  label: OPTIONAL,
  jsonName,
});
const IO = { inputType: '.prazo.test.v1.EchoRequest', outputType: '.prazo.test.v1.EchoResponse' };

const registry = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: 'prazo/test/v1/echo.proto',
    package: 'prazo.test.v1',
    syntax: 'proto3',
    messageType: [
      {
        name: 'EchoRequest',
        field: [field('text', 1, STRING, 'text'), field('delay_ms', 2, INT32, 'delayMs')],
      },
      {
        name: 'EchoResponse',
        field: [
          field('text', 1, STRING, 'text'),
          field('left_ms', 2, DOUBLE, 'leftMs'),
          field('attempt', 3, INT32, 'attempt'),
        ],
      },
    ],
    service: [
      {
        name: 'EchoService',
        method: [
          {
            name: 'Get',
            ...IO,
            options: { idempotencyLevel: MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS },
          },
          { name: 'Put', ...IO, options: { idempotencyLevel: MethodOptions_IdempotencyLevel.IDEMPOTENT } },
          { name: 'Charge', ...IO },
          {
            name: 'Watch',
            ...IO,
            serverStreaming: true,
            options: { idempotencyLevel: MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS },
          },
        ],
      },
    ],
  }),
  () => undefined,
);

export interface EchoRequest {
  text: string;
  delayMs: number;
}
export interface EchoResponse {
  text: string;
  leftMs: number;
  attempt: number;
}

export const EchoService: DescService = registry.getService('prazo.test.v1.EchoService')!;

/** The service's methods, typed loosely enough for `createClient` without generated types. */
export interface EchoClient {
  get(request: Partial<EchoRequest>, options?: CallOptionsLike): Promise<EchoResponse>;
  put(request: Partial<EchoRequest>, options?: CallOptionsLike): Promise<EchoResponse>;
  charge(request: Partial<EchoRequest>, options?: CallOptionsLike): Promise<EchoResponse>;
  watch(request: Partial<EchoRequest>, options?: CallOptionsLike): AsyncIterable<EchoResponse>;
}
export interface CallOptionsLike {
  timeoutMs?: number;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export const getMethod = EchoService.method.get as DescMethodUnary;

export type Protocol = 'connect' | 'grpc' | 'grpc-web';
export const PROTOCOLS: readonly Protocol[] = ['connect', 'grpc', 'grpc-web'];

/** A transport of `protocol` to `baseUrl` (HTTP/2 over cleartext, which all three speak). */
export function transportFor(
  protocol: Protocol,
  baseUrl: string,
  interceptors: Interceptor[] = [],
): Transport {
  const options = { baseUrl, httpVersion: '2' as const, interceptors };
  if (protocol === 'grpc') return createGrpcTransport(options);
  if (protocol === 'grpc-web') return createGrpcWebTransport(options);
  return createConnectTransport(options);
}

export interface EchoServer {
  readonly url: string;
  close(): Promise<void>;
}

/** A connect-node server (h2c, or HTTP/1.1 with `http1`) for `routes`, with server `interceptors`. */
export async function startServer(
  routes: (router: ConnectRouter) => void,
  interceptors: Interceptor[] = [],
  http1 = false,
): Promise<EchoServer> {
  const handler = connectNodeAdapter({ routes, interceptors });
  const server = http1 ? http.createServer(handler) : http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  if (!http1) (server as http2.Http2Server).on('session', (s) => sessions.add(s));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sessions) s.destroy();
      if (http1) (server as http.Server).closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
