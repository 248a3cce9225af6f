import { type ServerUnaryCall, type sendUnaryData, status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { DependencyFailedError } from '../errors/dependency.js';
import { deadlineInterceptor } from './client.js';
import { echoClient, type SayReply, say, startEcho } from './grpc.test-helpers.js';
import { type GrpcDeadlineOptions, type WithDeadline, withGrpcDeadline } from './server.js';
import { prazoErrorOf } from './status.js';

/**
 * Pushback over gRPC (SPEC X6), exactly gRPC's (proposal A6): a middle service whose own dependency is
 * down answers `UNAVAILABLE` with the trailer `grpc-retry-pushback-ms: -1`, and grpc-js's own retries
 * and hedges (a service config's `retryPolicy` / `hedgingPolicy`, no prazo on the caller) stop on it:
 * the middle sees one call per user call. Real grpc-js servers and clients on 127.0.0.1.
 */

type Call = WithDeadline<ServerUnaryCall<{ text: string }, SayReply>>;

const stops: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** A port nothing listens on (a server started and stopped): connections are refused. */
async function deadAddress(): Promise<string> {
  const gone = await startEcho({ say: () => {} });
  await gone.stop();
  return gone.address;
}

/** The middle: `say` calls the deep service through prazo's interceptor and passes its failure on. */
async function startMiddle(deep: string, options: GrpcDeadlineOptions = {}) {
  const downstream = echoClient(deep, { interceptors: [deadlineInterceptor({ name: 'deep', p99Ms: 20 })] });
  const seen = { calls: 0 };
  const start = () =>
    startEcho({
      say: withGrpcDeadline(async (call: Call, cb: sendUnaryData<SayReply>) => {
        seen.calls += 1;
        // The handler only lets the error through (here: rejects with it).
        const reply = await say(downstream, { text: call.request.text });
        cb(null, reply);
      }, options),
    });
  // The dead address's port is free again: the OS may give it to the middle itself, which would then
  // call itself until the deadline (seen under load on the Node 24 matrix line: 3,501 calls, not 8).
  let middle = await start();
  while (middle.address === deep) {
    const taken = middle;
    middle = await start();
    await taken.stop();
  }
  stops.push(
    () => middle.stop(),
    () => downstream.close(),
  );
  return { address: middle.address, seen };
}

/** A plain grpc-js client with gRPC's own retry policy (or hedging policy): 4 attempts on UNAVAILABLE. */
function retryingClient(address: string, policy: 'retry' | 'hedge') {
  const method = [{ service: 'prazo.test.Echo' }];
  const config =
    policy === 'retry'
      ? {
          methodConfig: [
            {
              name: method,
              retryPolicy: {
                maxAttempts: 4,
                initialBackoff: '0.01s',
                maxBackoff: '0.05s',
                backoffMultiplier: 2,
                retryableStatusCodes: ['UNAVAILABLE'],
              },
            },
          ],
        }
      : {
          methodConfig: [
            {
              name: method,
              hedgingPolicy: { maxAttempts: 4, hedgingDelay: '0.5s', nonFatalStatusCodes: ['UNAVAILABLE'] },
            },
          ],
        };
  const client = echoClient(address, {
    'grpc.service_config': JSON.stringify(config),
    'grpc.enable_retries': 1,
  });
  stops.push(() => client.close());
  return client;
}

const failureOf = async (promise: Promise<unknown>) => {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return error as Error & { code: number; metadata: { get(k: string): unknown[] } };
  }
};

describe('withGrpcDeadline pushes back when the handler’s dependency failed (SPEC X6, gRPC A6)', () => {
  it('UNAVAILABLE + grpc-retry-pushback-ms: -1; the dependency’s failure is the cause', async () => {
    const middle = await startMiddle(await deadAddress());
    const client = echoClient(middle.address);
    stops.push(() => client.close());
    const error = await failureOf(say(client, { text: 'x' }, { deadline: Date.now() + 2_000 }));
    expect(error?.code).toBe(status.UNAVAILABLE);
    expect(error?.metadata.get('grpc-retry-pushback-ms')).toEqual(['-1']);
    expect(error?.message).toMatch(/prazo: deep answered gRPC status 14/);
  });

  it.each(['retry', 'hedge'] as const)(
    'grpc-js’s own %s policy stops on it: the middle sees one call per user call',
    async (policy) => {
      const middle = await startMiddle(await deadAddress());
      const client = retryingClient(middle.address, policy);
      for (let i = 0; i < 5; i += 1) {
        const error = await failureOf(say(client, { text: 'x' }, { deadline: Date.now() + 3_000 }));
        expect(error?.code).toBe(status.UNAVAILABLE);
      }
      expect(middle.seen.calls).toBe(5);
    },
  );

  it.each(['retry', 'hedge'] as const)(
    'with `pushback: false` the same %s policy calls the middle 4 times per user call (the test can fail)',
    async (policy) => {
      const middle = await startMiddle(await deadAddress(), { pushback: false });
      const client = retryingClient(middle.address, policy);
      for (let i = 0; i < 2; i += 1)
        await failureOf(say(client, { text: 'x' }, { deadline: Date.now() + 5_000 }));
      expect(middle.seen.calls).toBe(8);
    },
  );

  it('a deadline that cannot fit the dependency: DEADLINE_EXCEEDED with the pushback', async () => {
    const deep = await startEcho({
      say: (_call: unknown, cb: sendUnaryData<SayReply>) =>
        cb(null, { text: 'ok', remainingMs: 0, deadlineEpochMs: 0 }),
    });
    stops.push(() => deep.stop());
    const downstream = echoClient(deep.address, {
      interceptors: [deadlineInterceptor({ name: 'deep', p99Ms: 5_000 })],
    });
    stops.push(() => downstream.close());
    const middle = await startEcho({
      say: withGrpcDeadline(async (_call: Call, cb: sendUnaryData<SayReply>) => {
        cb(null, await say(downstream, { text: 'x' }));
      }),
    });
    stops.push(() => middle.stop());
    const client = retryingClient(middle.address, 'retry');
    const error = await failureOf(say(client, { text: 'x' }, { deadline: Date.now() + 1_000 }));
    expect(error?.code).toBe(status.DEADLINE_EXCEEDED);
    expect(error?.metadata.get('grpc-retry-pushback-ms')).toEqual(['-1']);
  });
});

describe('deadlineInterceptor names a dependency’s failure status (SPEC X6)', () => {
  it('UNAVAILABLE gets a DependencyFailedError cause, marked pushback when the server pushed back', async () => {
    const middle = await startMiddle(await deadAddress());
    const client = echoClient(middle.address, { interceptors: [deadlineInterceptor({ name: 'middle' })] });
    stops.push(() => client.close());
    const error = await failureOf(say(client, { text: 'x' }));
    const cause = prazoErrorOf(error);
    expect(cause).toBeInstanceOf(DependencyFailedError);
    expect(cause).toMatchObject({
      code: 'DEPENDENCY_FAILED',
      dependency: 'middle',
      grpcCode: 14,
      pushback: true,
    });
    // Straight to a dead port (no server to push back): a failure, not a pushback.
    const direct = echoClient(await deadAddress(), { interceptors: [deadlineInterceptor({ name: 'deep' })] });
    stops.push(() => direct.close());
    const refused = prazoErrorOf(await failureOf(say(direct, { text: 'x' })));
    expect(refused).toMatchObject({ code: 'DEPENDENCY_FAILED', grpcCode: 14, pushback: false });
  });
});
