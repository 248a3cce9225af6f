import { fileURLToPath } from 'node:url';
import {
  type Client,
  type ClientOptions,
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  Server,
  ServerCredentials,
  type ServiceClientConstructor,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** Test helpers: the Echo service from test/fixtures/echo.proto, on 127.0.0.1 only. */

export interface SayRequest {
  text?: string;
  delayMs?: number;
  count?: number;
}
export interface SayReply {
  text: string;
  remainingMs: number;
  deadlineEpochMs: number;
}

const PROTO = fileURLToPath(new URL('../../test/fixtures/echo.proto', import.meta.url));
const definition = loadSync(PROTO, { keepCase: false, longs: Number, defaults: true });
const loaded = loadPackageDefinition(definition) as unknown as {
  prazo: { test: { Echo: ServiceClientConstructor & GrpcObject } };
};
export const Echo = loaded.prazo.test.Echo;
export const echoService: ServiceDefinition = Echo.service;

/** Starts a gRPC server with `impl` on 127.0.0.1 and returns its address and a stop function. */
export async function startEcho(impl: UntypedServiceImplementation) {
  const server = new Server();
  server.addService(echoService, impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const address = `127.0.0.1:${port}`;
  return { address, port, stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}

/** An Echo client for `address`. */
export function echoClient(address: string, options: ClientOptions = {}): Client & EchoMethods {
  return new Echo(address, credentials.createInsecure(), options) as unknown as Client & EchoMethods;
}

type Callback<T> = (error: (Error & { code?: number; details?: string }) | null, value?: T) => void;
export interface EchoMethods {
  say(request: SayRequest, callback: Callback<SayReply>): unknown;
  say(request: SayRequest, options: { deadline?: Date | number }, callback: Callback<SayReply>): unknown;
  count(request: SayRequest, options?: { deadline?: Date | number }): NodeJS.ReadableStream;
}

/** Calls `say` as a promise; rejects with the grpc-js ServiceError. */
export function say(
  client: EchoMethods,
  request: SayRequest,
  options: { deadline?: Date | number } = {},
): Promise<SayReply> {
  return new Promise((resolve, reject) =>
    client.say(request, options, (error, value) => (error ? reject(error) : resolve(value as SayReply))),
  );
}
