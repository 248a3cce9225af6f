import { Code, ConnectError, createClient, type HandlerContext, type Interceptor } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from 'vitest';
import { currentDeadline, runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency } from '../dependency/dependency.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isPrazoError } from '../errors/base.js';
import { isDeadlineInsufficient, isRetryBudgetExhausted } from '../errors/guards.js';
import { connectClientInterceptor, isIdempotentProcedure } from './client.js';
import {
  type EchoClient,
  type EchoRequest,
  type EchoResponse,
  type EchoServer,
  EchoService,
  getMethod,
  PROTOCOLS,
  type Protocol,
  startServer,
  transportFor,
} from './connect.test-helpers.js';
import { connectServerInterceptor } from './server.js';

/**
 * prazo/connect against a real connect-node server on 127.0.0.1, over each of Connect's three
 * protocols (HTTP/2 cleartext): the client interceptor (deadline → the call's timeout, D4, the
 * dependency's budget, retries for idempotent procedures only) and the server interceptor (the
 * handler under the incoming deadline, an expired request refused without running it). Real time,
 * generous margins.
 */

const servers: EchoServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

type Impl = (request: EchoRequest, context: HandlerContext) => Promise<Partial<EchoResponse>>;

/** A server whose Get, Put and Charge run `impl`; Watch streams three answers. */
async function serve(impl: Impl, interceptors: Interceptor[] = []): Promise<EchoServer> {
  const server = await startServer((router) => {
    router.service(EchoService, {
      get: impl,
      put: impl,
      charge: impl,
      async *watch(request: EchoRequest, context: HandlerContext) {
        for (let i = 1; i <= 3; i += 1)
          yield await impl({ ...request, text: `${request.text}${i}` }, context);
      },
    } as never);
  }, interceptors);
  servers.push(server);
  return server;
}

const clientOf = (protocol: Protocol, url: string, interceptors: Interceptor[] = []): EchoClient =>
  createClient(EchoService, transportFor(protocol, url, interceptors)) as unknown as EchoClient;

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/** What the server saw of one request. */
interface Seen {
  readonly timeoutMs: number | undefined;
  readonly epoch: string | null;
  readonly connectTimeout: string | null;
  readonly grpcTimeout: string | null;
}

function recorder() {
  const seen: Seen[] = [];
  const impl: Impl = async (request, context) => {
    seen.push({
      timeoutMs: context.timeoutMs(),
      epoch: context.requestHeader.get('x-deadline-epoch-ms'),
      connectTimeout: context.requestHeader.get('connect-timeout-ms'),
      grpcTimeout: context.requestHeader.get('grpc-timeout'),
    });
    return { text: request.text, attempt: seen.length };
  };
  return { seen, impl };
}

describe('isIdempotentProcedure', () => {
  it('reads the descriptor: NO_SIDE_EFFECTS and IDEMPOTENT may repeat, no level runs once', () => {
    expect(isIdempotentProcedure(getMethod)).toBe(true);
    expect(isIdempotentProcedure(EchoService.method.put!)).toBe(true);
    expect(isIdempotentProcedure(EchoService.method.charge!)).toBe(false);
    expect(isIdempotentProcedure({})).toBe(false);
  });
});

for (const protocol of PROTOCOLS) {
  describe(`prazo/connect over ${protocol} (real connect-node server on 127.0.0.1)`, () => {
    it('the ambient deadline becomes the call timeout the server reads, and x-deadline-epoch-ms travels', async () => {
      const { seen, impl } = recorder();
      const server = await serve(impl);
      // p99 300 → attempt timeout 420 ms: the 400 ms left of the ambient deadline bounds the call.
      const dependency = createDependency({ name: 'echo', p99Ms: 300, attempts: 1 });
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const before = Date.now();
      const answer = await runWithDeadline(Deadline.after(400), () => client.get({ text: 'hi' }));
      expect(answer.text).toBe('hi');
      const [s] = seen;
      expect(s!.timeoutMs).toBeGreaterThan(200);
      expect(s!.timeoutMs).toBeLessThanOrEqual(400);
      if (protocol === 'connect') {
        expect(Number(s!.connectTimeout)).toBeGreaterThan(200);
        expect(Number(s!.connectTimeout)).toBeLessThanOrEqual(400);
      } else expect(s!.grpcTimeout).toMatch(/^\d+[mu]$/);
      const epoch = Number(s!.epoch);
      expect(epoch).toBeGreaterThan(before + 200);
      expect(epoch).toBeLessThanOrEqual(Date.now() + 400);

      // The call's own timeout, shorter, wins; without either, the dependency's attempt timeout bounds it.
      await runWithDeadline(Deadline.after(2_000), () => client.get({ text: 'own' }, { timeoutMs: 350 }));
      expect(seen[1]!.timeoutMs).toBeLessThanOrEqual(350);
      expect(seen[1]!.timeoutMs).toBeGreaterThan(200);
      await client.get({ text: 'none' });
      expect(seen[2]!.timeoutMs).toBeLessThanOrEqual(420);
      expect(seen[2]!.timeoutMs).toBeGreaterThan(220);
    });

    it('D4: with less than the p99 left, deadline_exceeded (cause DEADLINE_INSUFFICIENT) and nothing sent', async () => {
      const { seen, impl } = recorder();
      const server = await serve(impl);
      const dependency = createDependency({ name: 'echo', p99Ms: 300 });
      const events: DependencyEvent[] = [];
      dependency.on((e) => events.push(e));
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const error = await runWithDeadline(Deadline.after(120), () => client.get({ text: 'x' })).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect(isDeadlineInsufficient((error as ConnectError).cause)).toBe(true);
      expect(seen).toHaveLength(0);
      expect(events.map((e) => e.type)).toEqual(['deadline-insufficient']);
      // Streams too.
      const stream = runWithDeadline(Deadline.after(120), () => client.watch({ text: 'w' }));
      const streamError = await (async () => {
        for await (const _ of stream) {
          /* nothing arrives */
        }
      })().catch((e: unknown) => e);
      expect((streamError as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect(isDeadlineInsufficient((streamError as ConnectError).cause)).toBe(true);
      expect(seen).toHaveLength(0);
      // The stream's refusal is told to the dependency's listeners as the unary call's is.
      expect(events.map((e) => e.type)).toEqual(['deadline-insufficient', 'deadline-insufficient']);
      expect(events[1]).toMatchObject({ dependency: 'echo', neededMs: 300, attempt: 1 });
    });

    it('retries an unavailable idempotent procedure (Get, Put), never a procedure with no idempotency level', async () => {
      const calls = { n: 0 };
      const server = await serve(async (request) => {
        calls.n += 1;
        if (calls.n % 2 === 1) throw new ConnectError('down for a moment', Code.Unavailable);
        return { text: request.text, attempt: calls.n };
      });
      // p99 300: attempts of 420 ms, so a busy machine does not turn an Unavailable answer into a timeout.
      const dependency = createDependency({ name: 'echo', p99Ms: 300, attempts: 2, backoff: { baseMs: 1 } });
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      expect((await client.get({ text: 'a' })).attempt).toBe(2);
      expect((await client.put({ text: 'b' })).attempt).toBe(4);
      expect(calls.n).toBe(4);
      const error = await client.charge({ text: 'c' }).catch((e: unknown) => e);
      expect((error as ConnectError).code).toBe(Code.Unavailable);
      expect(calls.n).toBe(5); // sent once, not retried
    });

    it('hedges an idempotent procedure after the live p95 (first answer wins), never a non-idempotent one', async () => {
      let calls = 0;
      const cancelled: number[] = [];
      const server = await serve(async (request, context) => {
        calls += 1;
        const n = calls;
        // The first copy is slow (2 s, or until its caller gives up on it), and so is every Charge.
        if (n === 1) await sleep(2_000, context.signal).catch(() => cancelled.push(n));
        if (request.text === 'charge') await sleep(150); // 110 ms past the 40 ms a hedge would wait
        return { text: request.text, attempt: n };
      });
      // A latency source pinned at 40 ms for every quantile: hedge after 40 ms, while 40 ms are left.
      const recorder = {
        record: () => {},
        quantile: () => 40,
        lastWindow: () => undefined,
        currentWindow: () => {
          throw new Error('unused');
        },
      };
      const dependency = createDependency({ name: 'echo', p99Ms: 300, attempts: 1, hedge: true, recorder });
      const events: DependencyEvent[] = [];
      dependency.on((e) => events.push(e));
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const answer = await client.get({ text: 'get' });
      expect(answer.attempt).toBe(2); // the hedge's answer, well before the first copy's 2 s
      expect(events.filter((e) => e.type === 'attempt').map((e) => e.type === 'attempt' && e.kind)).toEqual([
        'original',
        'hedge',
      ]);
      for (let i = 0; i < 150 && cancelled.length === 0; i += 1) await sleep(10);
      expect(cancelled).toEqual([1]); // the losing copy was cancelled on the server
      // Charge has no idempotency level: one copy, however slow.
      expect((await client.charge({ text: 'charge' })).attempt).toBe(3);
      expect(calls).toBe(3);
    });

    it('a pushback (grpc-retry-pushback-ms: -1 in the error metadata) is not retried', async () => {
      let calls = 0;
      const server = await serve(async () => {
        calls += 1;
        throw new ConnectError('my dependency failed', Code.Unavailable, { 'grpc-retry-pushback-ms': '-1' });
      });
      const dependency = createDependency({ name: 'echo', p99Ms: 300, attempts: 3, backoff: { baseMs: 1 } });
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const error = await client.get({ text: 'a' }).catch((e: unknown) => e);
      expect((error as ConnectError).code).toBe(Code.Unavailable);
      expect(calls).toBe(1);
    });

    it("the dependency's retry budget bounds retries under an unavailable storm", async () => {
      let calls = 0;
      const server = await serve(async () => {
        calls += 1;
        throw new ConnectError('storm', Code.Unavailable);
      });
      const dependency = createDependency({
        name: 'echo',
        p99Ms: 400, // attempts of 560 ms: a busy test machine does not turn the storm into timeouts
        attempts: 3,
        backoff: { baseMs: 1 },
        retryBudget: { maxRatio: 0.1, minPerSecond: 0 },
        throttle: false,
      });
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const errors = await Promise.all(
        Array.from({ length: 40 }, (_, i) => client.get({ text: String(i) }).catch((e: unknown) => e)),
      );
      expect(errors.filter((e) => !(e instanceof ConnectError && e.code === Code.Unavailable))).toEqual([]);
      // 40 originals and at most 10% more (naively, 3 attempts each: 120).
      expect(calls).toBeGreaterThanOrEqual(40);
      expect(calls).toBeLessThanOrEqual(44);
      const refused = errors.filter((e) => isRetryBudgetExhausted((e as ConnectError).cause));
      expect(refused.length).toBeGreaterThanOrEqual(36);
    });

    it('server: the handler runs under the incoming deadline (Connect or gRPC timeout, capped at maxMs)', async () => {
      const left: number[] = [];
      const server = await serve(
        async (request) => {
          const d = currentDeadline();
          left.push(d === undefined ? -1 : d.remainingMs());
          return { text: request.text };
        },
        [connectServerInterceptor({ maxMs: 500, defaultMs: 300 })],
      );
      const client = clientOf(protocol, server.url);
      await client.get({ text: 'a' }, { timeoutMs: 450 });
      await client.get({ text: 'b' }, { timeoutMs: 5_000 }); // capped at maxMs
      await client.get({ text: 'c' }); // none: defaultMs
      await client.get({ text: 'd' }, { headers: { 'x-deadline-epoch-ms': String(Date.now() + 200) } });
      expect(left[0]).toBeGreaterThan(250);
      expect(left[0]).toBeLessThanOrEqual(450);
      expect(left[1]).toBeGreaterThan(300);
      expect(left[1]).toBeLessThanOrEqual(500);
      expect(left[2]).toBeGreaterThan(150);
      expect(left[2]).toBeLessThanOrEqual(300);
      expect(left[3]).toBeGreaterThan(50);
      expect(left[3]).toBeLessThanOrEqual(200);
    });

    it('server: a request arriving past its deadline is answered deadline_exceeded, its handler never run', async () => {
      let ran = 0;
      const sources: string[] = [];
      const server = await serve(
        async (request) => {
          ran += 1;
          return { text: request.text };
        },
        [connectServerInterceptor({ onDeadline: (incoming) => sources.push(incoming.source) })],
      );
      const client = clientOf(protocol, server.url);
      const error = await client
        .get({ text: 'late' }, { headers: { 'x-deadline-epoch-ms': String(Date.now() - 1_000) } })
        .catch((e: unknown) => e);
      expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect((error as ConnectError).rawMessage).toMatch(/past its deadline/);
      expect(ran).toBe(0);
      expect(sources).toEqual(['x-deadline-epoch-ms']);
    });

    it("server: the handler's signal aborts at the capped deadline, before Connect's own timeout", async () => {
      const aborted: number[] = [];
      const server = await serve(
        async (_request, context) => {
          const started = Date.now();
          await sleep(5_000, context.signal).catch((reason: unknown) => {
            aborted.push(Date.now() - started);
            throw reason;
          });
          return {};
        },
        [connectServerInterceptor({ maxMs: 100 })],
      );
      const client = clientOf(protocol, server.url);
      const error = await client.get({ text: 'slow' }, { timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect(aborted).toHaveLength(1);
      expect(aborted[0]).toBeGreaterThan(50);
      expect(aborted[0]).toBeLessThan(1_500);
    });

    it('two hops: the middle hop calls on with what is left, and answers a failed dependency with a pushback', async () => {
      const { seen, impl } = recorder();
      const leaf = await serve(impl);
      // Attempts of 1.35 s (p99 450, slack 3): what is left of the caller's deadline bounds the call.
      const leafDependency = createDependency({
        name: 'leaf',
        p99Ms: 450,
        slack: 3,
        forceSlack: true,
        attempts: 1,
      });
      const leafClient = clientOf(protocol, leaf.url, [
        connectClientInterceptor({ dependency: leafDependency }),
      ]);
      const middle = await serve(
        async (request) => {
          if (request.text === 'hurry') await sleep(300);
          const answer = await leafClient.get({ text: request.text });
          return { text: `middle:${answer.text}` };
        },
        [connectServerInterceptor({ maxMs: 5_000 })],
      );
      const client = clientOf(protocol, middle.url);
      // 400 ms of room for a loaded machine between the caller and the leaf (300 ms flaked at load 5).
      expect((await client.get({ text: 'a' }, { timeoutMs: 1_200 })).text).toBe('middle:a');
      expect(seen[0]!.timeoutMs).toBeLessThanOrEqual(1_200);
      expect(seen[0]!.timeoutMs).toBeGreaterThan(800);
      // 300 ms spent in the middle leave 300 ms, less than the leaf's p99 (450): D4 there, and a pushback.
      // A slow machine only leaves less: 300 ms of it before the deadline itself is gone.
      const error = await client.get({ text: 'hurry' }, { timeoutMs: 600 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect((error as ConnectError).metadata.get('grpc-retry-pushback-ms')).toBe('-1');
      expect(seen).toHaveLength(1); // the leaf never saw the second call
    });

    it('streams: the deadline travels and bounds the stream; a stream is never retried', async () => {
      const { seen, impl } = recorder();
      const server = await serve(impl, [connectServerInterceptor()]);
      const dependency = createDependency({ name: 'echo', p99Ms: 50, attempts: 3 });
      const client = clientOf(protocol, server.url, [connectClientInterceptor({ dependency })]);
      const texts: string[] = [];
      await runWithDeadline(Deadline.after(600), async () => {
        for await (const m of client.watch({ text: 'w' })) texts.push(m.text);
      });
      expect(texts).toEqual(['w1', 'w2', 'w3']);
      expect(seen[0]!.timeoutMs).toBeLessThanOrEqual(600);
      expect(seen[0]!.timeoutMs).toBeGreaterThan(300);
      expect(Number(seen[0]!.epoch)).toBeLessThanOrEqual(Date.now() + 600);
    });
  });
}

describe('prazo/connect errors', () => {
  it("a prazo refusal is a ConnectError with prazo's error as cause", async () => {
    const dependency = createDependency({ name: 'nowhere', p99Ms: 500 });
    const client = clientOf('connect', 'http://127.0.0.1:9', [connectClientInterceptor({ dependency })]);
    const error = await runWithDeadline(Deadline.after(100), () => client.get({ text: 'x' })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    expect(isPrazoError((error as ConnectError).cause)).toBe(true);
  });

  it('refuses a misspelt option with a "did you mean"', () => {
    expect(() => connectClientInterceptor({ dependancy: {} } as never)).toThrow(/dependency/);
    expect(() => connectServerInterceptor({ maxMS: 1 } as never)).toThrow(/maxMs/);
  });
});
