import { createServer, type Server as NetServer, type Socket } from 'node:net';
import {
  credentials,
  type InterceptingCall,
  type Interceptor,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep } from '../clock/clock.js';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isThrottled } from '../errors/guards.js';
import { instrumentPrazo } from '../otel/instrument.js';
import { createSdk, pointValue } from '../otel/sdk.test-helpers.js';
import { seededRandom } from '../testing/random.js';
import { deadlineInterceptor } from './client.js';
import { Echo, echoClient, echoService, type SayReply, say } from './grpc.test-helpers.js';
import { prazoErrorOf } from './status.js';

/**
 * Issue 23 item 1 for gRPC: `deadlineInterceptor` admits every call through the executor's own
 * `AdaptiveThrottle` (one per interceptor), counts each call at its status, and refuses locally
 * (UNAVAILABLE, cause ThrottledError) without touching the channel. Real grpc-js clients and servers
 * on 127.0.0.1; the throttle's time is a FakeClock stepped 5 ms per call (200 calls/s).
 */

const stops: Array<() => unknown> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** Channel options: reconnect within tens of ms once the server is back (grpc-js waits 1 s by default). */
const FAST_RECONNECT = {
  'grpc.initial_reconnect_backoff_ms': 20,
  'grpc.min_reconnect_backoff_ms': 20,
  'grpc.max_reconnect_backoff_ms': 50,
};

/** An interceptor placed below prazo's: counts the calls that reached the channel. */
function below(): { interceptor: Interceptor; sent: () => number } {
  let sent = 0;
  const interceptor: Interceptor = (options, nextCall): InterceptingCall => {
    sent += 1;
    return nextCall(options) as InterceptingCall;
  };
  return { interceptor, sent: () => sent };
}

/** A listener that accepts each connection and resets it at once: a backend that is down. Counts them. */
async function resetting(
  port = 0,
): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: NetServer = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.resetAndDestroy();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as { port: number }).port;
  return {
    port: bound,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The Echo service on `port` (0: any), answering `say` with `answer`. */
async function startOn(
  port: number,
  answer: (call: ServerUnaryCall<{ text: string }, SayReply>, cb: sendUnaryData<SayReply>) => void,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const server = new Server();
  server.addService(echoService, {
    say: answer,
    count: (call: { end(): void }) => call.end(),
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return {
    port: bound,
    stop: async () => {
      server.forceShutdown();
    },
  };
}

const ok = (_call: unknown, cb: sendUnaryData<SayReply>) =>
  cb(null, { text: 'ok', remainingMs: -1, deadlineEpochMs: 0 });

interface Outcome {
  ok: boolean;
  refused: boolean;
  error?: unknown;
}

/** One call, its outcome; the throttle's clock then moves 5 ms (and real time 1 ms, for grpc-js). */
async function step(client: ReturnType<typeof echoClient>, clock: FakeClock): Promise<Outcome> {
  const outcome = await say(client, { text: 'x' }).then(
    () => ({ ok: true, refused: false }),
    (error: unknown) => ({ ok: false, refused: isThrottled(prazoErrorOf(error)), error }),
  );
  clock.advance(5);
  await sleep(systemClock, 1);
  return outcome;
}

describe('deadlineInterceptor: adaptive throttling (issue 23 item 1)', () => {
  it('a backend that is down: after the window ~90% refused, no connection for a refused call, recovery once it is back', async () => {
    const clock = new FakeClock();
    const down = await resetting();
    stops.push(() => down.close());
    const counted = below();
    const prazo = deadlineInterceptor({ name: 'deep', clock, random: seededRandom(7) });
    const events: DependencyEvent[] = [];
    prazo.events.on((e) => events.push(e));
    const client = echoClient(`127.0.0.1:${down.port}`, {
      interceptors: [prazo, counted.interceptor],
      ...FAST_RECONNECT,
    });
    stops.push(() => client.close());

    const outcomes: Outcome[] = [];
    for (let i = 0; i < 400; i += 1) outcomes.push(await step(client, clock)); // 2 s at 200 calls/s
    const refused = outcomes.filter((o) => o.refused).length;
    expect(outcomes.every((o) => !o.ok)).toBe(true);
    expect(counted.sent()).toBe(outcomes.length - refused); // a refused call never reached the channel
    expect(down.connections()).toBeLessThanOrEqual(counted.sent()); // nor opened a connection
    const late = outcomes.slice(200); // after the first window
    const lateShare = late.filter((o) => o.refused).length / late.length;
    expect(lateShare).toBeGreaterThan(0.8);
    expect(lateShare).toBeLessThan(0.95);
    expect(events.filter((e) => e.type === 'throttled')).toHaveLength(refused);
    expect(events[0]).toMatchObject({ type: 'throttled', dependency: 'deep' });
    const error = outcomes.find((o) => o.refused)!.error as { code: number };
    expect(error.code).toBe(status.UNAVAILABLE);
    const cause = prazoErrorOf(error);
    expect(cause).toMatchObject({ code: 'THROTTLED', dependency: 'deep', accepts: 0, windowMs: 1_000 });
    expect(prazo.throttling()!.probability).toBeCloseTo(0.9, 5);

    // The backend returns on the same port.
    await down.close();
    const back = await startOn(down.port, ok);
    stops.push(() => back.stop());
    const returnedAt = clock.now();
    let recoveredAt: number | undefined;
    const recent: boolean[] = [];
    for (let i = 0; i < 1_000 && recoveredAt === undefined; i += 1) {
      const o = await step(client, clock);
      recent.push(o.ok);
      if (recent.length > 200) recent.shift(); // the last second of calls
      if (recent.length === 200 && recent.filter(Boolean).length >= 198) recoveredAt = clock.now();
    }
    expect(recoveredAt).toBeDefined();
    // ≥ 99% answered over a whole second, that second ending within ~2.65 s of the return
    // (the throttle's ≈ 1.65 s ramp, docs/throttling.md, plus that second).
    expect(recoveredAt! - returnedAt).toBeLessThan(3_500);
    expect(prazo.throttling()!.probability).toBe(0);
  }, 30_000);

  it('a healthy backend at a burst: 300 concurrent calls, nothing refused', async () => {
    const server = await startOn(0, ok);
    stops.push(() => server.stop());
    const prazo = deadlineInterceptor({ name: 'healthy' });
    const client = echoClient(`127.0.0.1:${server.port}`, { interceptors: [prazo] });
    stops.push(() => client.close());
    const results = await Promise.allSettled(Array.from({ length: 300 }, () => say(client, { text: 'x' })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(300);
    expect(prazo.throttling()).toEqual({ requests: 300, accepts: 300, probability: 0 });
  });

  it("counts the server's answers as accepted (NOT_FOUND, a pushback), its failures not (INTERNAL); streams at their status", async () => {
    const clock = new FakeClock();
    let answer: { code: number; pushback?: boolean } = { code: status.NOT_FOUND };
    const server = await startOn(0, (_call, cb) => {
      const metadata = new Metadata();
      if (answer.pushback === true) metadata.set('grpc-retry-pushback-ms', '-1');
      cb({ code: answer.code, details: 'no', metadata });
    });
    stops.push(() => server.stop());
    const prazo = deadlineInterceptor({ clock, random: seededRandom(1) });
    const client = echoClient(`127.0.0.1:${server.port}`, { interceptors: [prazo] });
    stops.push(() => client.close());
    const run = async (n: number) => {
      let refused = 0;
      for (let i = 0; i < n; i += 1) if ((await step(client, clock)).refused) refused += 1;
      return refused;
    };
    expect(await run(50)).toBe(0); // the server's own answer: a missing row is not an outage
    answer = { code: status.UNAVAILABLE, pushback: true };
    expect(await run(50)).toBe(0); // its dependency failed, not it
    expect(prazo.throttling()).toMatchObject({ accepts: prazo.throttling()!.requests, probability: 0 });
    answer = { code: status.INTERNAL };
    expect(await run(300)).toBeGreaterThan(120); // the answered second leaves the window first

    // A stream is admitted at its start and refused like a unary call: nothing reaches the channel.
    const stream = new Echo(`127.0.0.1:${server.port}`, credentials.createInsecure(), {
      interceptors: [prazo],
    }) as unknown as { count(r: object): NodeJS.ReadableStream; close(): void };
    stops.push(() => stream.close());
    let streamRefused = 0;
    for (let i = 0; i < 30; i += 1) {
      const error = await new Promise<unknown>((resolve) => {
        const s = stream.count({ count: 1 });
        s.on('data', () => undefined);
        s.on('error', resolve);
        s.on('end', () => resolve(undefined));
      });
      if (isThrottled(prazoErrorOf(error))) streamRefused += 1;
    }
    expect(streamRefused).toBeGreaterThan(15);
  }, 30_000);

  it('a refused call touches nothing: not sent, an event each, the counts only from what was sent (property)', async () => {
    let failing = false;
    const server = await startOn(0, (_call, cb) =>
      failing ? cb({ code: status.UNAVAILABLE, details: 'down' }) : ok(_call, cb),
    );
    stops.push(() => server.stop());
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 20, maxLength: 60 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (pattern, seed) => {
          const clock = new FakeClock();
          const counted = below();
          const prazo = deadlineInterceptor({
            clock,
            random: seededRandom(seed),
            throttle: { minRequests: 0 },
          });
          const events: DependencyEvent[] = [];
          prazo.events.on((e) => events.push(e));
          const client = echoClient(`127.0.0.1:${server.port}`, {
            interceptors: [prazo, counted.interceptor],
          });
          let refused = 0;
          let sentFailures = 0;
          let sentOk = 0;
          for (const fail of pattern) {
            failing = fail;
            const before = counted.sent();
            const o = await say(client, { text: 'x' }).then(
              () => ({ refused: false, ok: true }),
              (error: unknown) => ({ refused: isThrottled(prazoErrorOf(error)), ok: false }),
            );
            clock.advance(2);
            if (o.refused) {
              refused += 1;
              expect(counted.sent()).toBe(before); // nothing reached the channel
            } else {
              expect(counted.sent()).toBe(before + 1);
              if (o.ok) sentOk += 1;
              else sentFailures += 1;
            }
          }
          client.close();
          expect(events.filter((e) => e.type === 'throttled')).toHaveLength(refused);
          // The window holds every call (a refusal is a request), the accepts only the answers.
          expect(prazo.throttling()).toMatchObject({
            requests: refused + sentOk + sentFailures,
            accepts: sentOk,
          });
        },
      ),
      { numRuns: 15 },
    );
  }, 60_000);

  it("prazo/otel counts the interceptor's refusals (addDependency(interceptor.events))", async () => {
    const sdk = createSdk();
    const clock = new FakeClock();
    const down = await resetting();
    stops.push(() => down.close());
    const prazo = deadlineInterceptor({ name: 'deep', clock, random: seededRandom(5) });
    const otel = instrumentPrazo({ meterProvider: sdk.provider });
    otel.addDependency(prazo.events);
    const client = echoClient(`127.0.0.1:${down.port}`, { interceptors: [prazo], ...FAST_RECONNECT });
    stops.push(() => client.close());
    let refused = 0;
    for (let i = 0; i < 100; i += 1) if ((await step(client, clock)).refused) refused += 1;
    expect(refused).toBeGreaterThan(30);
    const metrics = await sdk.collect();
    expect(pointValue(metrics.get('prazo.dependency.throttled'), { 'prazo.dependency': 'deep' })).toBe(
      refused,
    );
    otel.dispose();
    await sdk.shutdown();
  });

  it('throttle: false switches it off; bad throttle options are refused with their names', () => {
    expect(deadlineInterceptor({ throttle: false }).throttling()).toBeUndefined();
    expect(() => deadlineInterceptor({ throttle: { windowMS: 5 } as never })).toThrow(
      /did you mean `windowMs`/,
    );
    expect(() => deadlineInterceptor({ throttle: { maxProbability: 1 } })).toThrow(/maxProbability/);
  });
});
