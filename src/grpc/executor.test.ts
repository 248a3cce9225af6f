import {
  type ClientReadableStream,
  type ClientUnaryCall,
  InterceptingCall,
  type Interceptor,
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import { createDependency, type Dependency } from '../dependency/dependency.js';
import type { DependencyOptions } from '../dependency/options.js';
import type { CallTracer } from '../dependency/trace.js';
import { executorOf } from '../dependency/transport.js';
import type { DependencyEvent } from '../dependency/types.js';
import {
  isConcurrencyLimited,
  isDeadlineExceeded,
  isDeadlineInsufficient,
  isDependencyFailed,
  isInvalidOptions,
  isResponseTimeout,
  isThrottled,
} from '../errors/guards.js';
import { deadlineInterceptor } from './client.js';
import { grpcDeadlineEpochMs } from './deadline.js';
import { echoClient, type SayReply, type SayRequest, say, startEcho } from './grpc.test-helpers.js';
import { prazoErrorOf } from './status.js';

/**
 * `deadlineInterceptor({ dependency })` (issue #25 item 1): each gRPC call runs through the
 * executor's public seam (`openCall`, src/grpc/transport.ts), as prazo/http's calls do. A real
 * grpc-js server on 127.0.0.1 answers as each test asks (in `text`: `ok`, `fail`, `pushback`,
 * `hang`); the tests read what the executor owns (D4, the throttle, the concurrency limit, the
 * recorder, the events) and what reached the server (calls, `x-deadline-epoch-ms`, `grpc-timeout`).
 * The executor's clock is a FakeClock (its epoch set to the wall clock's, so the deadline grpc-js
 * arms is a real one) wherever the time the call takes does not matter.
 */

interface Arrival {
  readonly text: string;
  /** Wall-clock ms at which the server saw the call. */
  readonly at: number;
  /** The `x-deadline-epoch-ms` values it carried. */
  readonly epochHeader: unknown[];
  /** All the metadata it carried. */
  readonly metadata: Metadata;
  /** The deadline grpc-js rebuilt from `grpc-timeout`, epoch ms. */
  readonly deadline: number | undefined;
}

const arrivals: Arrival[] = [];
let echo: Awaited<ReturnType<typeof startEcho>>;

function pushbackMetadata(): Metadata {
  const metadata = new Metadata();
  metadata.set('grpc-retry-pushback-ms', '-1');
  return metadata;
}

beforeAll(async () => {
  echo = await startEcho({
    say: (call: ServerUnaryCall<SayRequest, SayReply>, cb: sendUnaryData<SayReply>) => {
      const text = call.request.text || 'ok'; // proto3: an absent string reads ''
      const delayMs = call.request.delayMs ?? 0;
      arrivals.push({
        text,
        at: Date.now(),
        epochHeader: call.metadata.get('x-deadline-epoch-ms'),
        metadata: call.metadata,
        deadline: grpcDeadlineEpochMs(call.getDeadline()),
      });
      const answer = (): void => {
        if (text === 'fail') cb({ code: status.UNAVAILABLE, details: 'down' });
        else if (text === 'pushback')
          cb({ code: status.UNAVAILABLE, details: 'its dependency is down', metadata: pushbackMetadata() });
        else if (text === 'not-found') cb({ code: status.NOT_FOUND, details: 'no such thing' });
        else cb(null, { text, remainingMs: 0, deadlineEpochMs: 0 });
      };
      if (text === 'hang') return; // never answers: the caller's deadline ends it
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    },
    count: (call: ServerWritableStream<SayRequest, SayReply>) => {
      const { count = 1, delayMs = 0 } = call.request;
      arrivals.push({
        text: 'count',
        at: Date.now(),
        epochHeader: call.metadata.get('x-deadline-epoch-ms'),
        metadata: call.metadata,
        deadline: grpcDeadlineEpochMs(call.getDeadline()),
      });
      let sent = 0;
      const next = (): void => {
        if (sent === count) {
          call.end();
          return;
        }
        sent += 1;
        call.write({ text: `#${sent}`, remainingMs: 0, deadlineEpochMs: 0 });
        setTimeout(next, delayMs);
      };
      next();
    },
  });
});
afterAll(() => echo.stop());
beforeEach(() => {
  arrivals.length = 0;
});

/** A dependency named `echo` (unless told otherwise) and a client whose calls run through it. */
function setup(options: Partial<DependencyOptions> = {}) {
  const dependency = createDependency({ name: 'echo', p99Ms: 100, ...options } as DependencyOptions);
  const events: DependencyEvent[] = [];
  dependency.on((event) => events.push(event));
  const interceptor = deadlineInterceptor({ dependency });
  const client = echoClient(echo.address, { interceptors: [interceptor] });
  return { dependency, events, interceptor, client, close: () => client.close() };
}

/** The executor's clock: fake, at the wall clock's epoch (grpc-js arms its deadline on the wall clock). */
const fakeNow = (): FakeClock => new FakeClock({ epoch: Date.now() });

const failureOf = (promise: Promise<unknown>): Promise<Error & { code?: number; details?: string }> =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: Error & { code?: number }) => error,
  );

const ofType = <T extends DependencyEvent['type']>(events: DependencyEvent[], type: T) =>
  events.filter((e): e is Extract<DependencyEvent, { type: T }> => e.type === type);

/** An interceptor placed below prazo's: the metadata each channel call starts with. */
function spy(): { interceptor: Interceptor; started: Metadata[] } {
  const started: Metadata[] = [];
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        started.push(metadata.clone());
        next(metadata, listener);
      },
    });
  return { interceptor, started };
}

/** Calls `say` with the caller's own `metadata`. */
const sayWith = (client: unknown, metadata: Metadata, request: SayRequest = {}): Promise<unknown> =>
  new Promise((resolve, reject) =>
    (client as { say: (...args: unknown[]) => unknown }).say(request, metadata, {}, (e: unknown) =>
      e ? reject(e) : resolve(undefined),
    ),
  );

/** An interceptor placed below prazo's: counts the channel calls made. */
function below(): { interceptor: Interceptor; made: () => number } {
  let made = 0;
  const interceptor: Interceptor = (options, nextCall): InterceptingCall => {
    made += 1;
    return nextCall(options) as InterceptingCall;
  };
  return { interceptor, made: () => made };
}

describe('deadlineInterceptor({ dependency }): gRPC calls through the executor (real grpc-js on 127.0.0.1)', () => {
  it("records each call's latency in the dependency's recorder and emits attempt / attempt-end (SPEC C5, R7)", async () => {
    const { dependency, events, close, client } = setup();
    for (let i = 0; i < 3; i += 1) expect((await say(client, { delayMs: 30 })).text).toBe('ok');
    const window = dependency.recorder.currentWindow();
    expect(window.successes).toBe(3);
    expect(window.max).toBeGreaterThanOrEqual(29);
    expect(ofType(events, 'attempt')).toEqual(
      Array.from({ length: 3 }, () => ({
        type: 'attempt',
        dependency: 'echo',
        kind: 'original',
        attempt: 1,
      })),
    );
    const ends = ofType(events, 'attempt-end');
    expect(ends.map((e) => e.outcome)).toEqual(['success', 'success', 'success']);
    for (const end of ends) expect(end.latencyMs).toBeGreaterThanOrEqual(29);
    // An answer that is not the dependency's failure (NOT_FOUND) is an answer: recorded as a success.
    const notFound = await failureOf(say(client, { text: 'not-found' }));
    expect(notFound.code).toBe(status.NOT_FOUND);
    expect(prazoErrorOf(notFound)).toBeUndefined();
    expect(dependency.recorder.currentWindow().successes).toBe(4);
    close();
  });

  it('refuses a call with less than the p99 left: DEADLINE_EXCEEDED, cause DeadlineInsufficientError, nothing sent (SPEC D4)', async () => {
    const clock = fakeNow();
    // A p99 of 1 s: the call that goes at the end has its 1.4 s attempt on a wall clock the fake one left behind.
    const { events, close, client } = setup({ clock, p99Ms: 1_000 });
    const error = await runWithDeadline(Deadline.after(600, { clock }), () => failureOf(say(client, {})));
    expect(error.code).toBe(status.DEADLINE_EXCEEDED);
    expect(error.details).toMatch(/^prazo: deadline insufficient for echo/);
    const cause = prazoErrorOf(error);
    expect(isDeadlineInsufficient(cause)).toBe(true);
    expect(cause).toMatchObject({ dependency: 'echo', neededMs: 1_000, remainingMs: 600 });
    // The call's own deadline (a grpc-js call option) is read too, capped by the ambient one.
    const own = await failureOf(say(client, {}, { deadline: clock.epochNow() + 500 }));
    expect(isDeadlineInsufficient(prazoErrorOf(own))).toBe(true);
    const capped = await runWithDeadline(Deadline.after(400, { clock }), () =>
      failureOf(say(client, {}, { deadline: clock.epochNow() + 5_000 })),
    );
    expect(prazoErrorOf(capped)).toMatchObject({ remainingMs: 400 });
    expect(arrivals).toHaveLength(0); // no request reached the server
    expect(ofType(events, 'deadline-insufficient')).toHaveLength(3);
    expect(ofType(events, 'attempt')).toHaveLength(0);
    // With the p99 left, it goes.
    await runWithDeadline(Deadline.after(1_500, { clock }), () => say(client, {}));
    expect(arrivals).toHaveLength(1);
    close();
  });

  it('throttles after failures: UNAVAILABLE, cause ThrottledError, no channel call', async () => {
    const clock = fakeNow();
    const dependency = createDependency({
      name: 'echo',
      p99Ms: 2_000, // its attempts' deadline is on a wall clock the fake one leaves behind: generous
      defaultDeadlineMs: 10_000,
      clock,
      random: () => 0, // refused whenever the probability is above 0
      throttle: { minRequests: 5 },
    });
    const events: DependencyEvent[] = [];
    dependency.on((e) => events.push(e));
    const channel = below();
    const interceptor = deadlineInterceptor({ dependency });
    const client = echoClient(echo.address, { interceptors: [interceptor, channel.interceptor] });
    for (let i = 0; i < 5; i += 1) {
      const failed = await failureOf(say(client, { text: 'fail' }));
      expect(failed.code).toBe(status.UNAVAILABLE);
      expect(failed.details).toBe('down');
      const cause = prazoErrorOf(failed);
      expect(isDependencyFailed(cause)).toBe(true);
      expect(cause).toMatchObject({ dependency: 'echo', grpcCode: status.UNAVAILABLE, pushback: false });
    }
    expect(arrivals).toHaveLength(5);
    expect(channel.made()).toBe(5);
    expect(ofType(events, 'attempt-end').map((e) => e.outcome)).toEqual(Array(5).fill('error'));
    const refused = await failureOf(say(client, { text: 'fail' }));
    expect(refused.code).toBe(status.UNAVAILABLE);
    expect(refused.details).toMatch(/^prazo: /);
    const cause = prazoErrorOf(refused);
    expect(isThrottled(cause)).toBe(true);
    expect(cause).toMatchObject({ dependency: 'echo', requests: 6, accepts: 0 });
    expect(arrivals).toHaveLength(5);
    expect(channel.made()).toBe(5); // not even a channel call was made
    expect(ofType(events, 'throttled')).toEqual([
      { type: 'throttled', dependency: 'echo', requests: 6, accepts: 0, probability: expect.any(Number) },
    ]);
    // The interceptor's throttle is the dependency's.
    expect(interceptor.throttling()).toEqual(dependency.throttling());
    expect(interceptor.events).toBe(dependency);
    client.close();
  });

  it("counts a server's pushback as an answer: it ends the call, with a `pushback` event (SPEC X6)", async () => {
    const clock = fakeNow();
    const { dependency, events, close, client } = setup({
      clock,
      p99Ms: 2_000,
      defaultDeadlineMs: 10_000,
      random: () => 0,
      throttle: { minRequests: 2 },
    });
    for (let i = 0; i < 4; i += 1) {
      const error = await failureOf(say(client, { text: 'pushback' }));
      expect(error.code).toBe(status.UNAVAILABLE);
      expect(prazoErrorOf(error)).toMatchObject({ grpcCode: status.UNAVAILABLE, pushback: true });
    }
    expect(arrivals).toHaveLength(4); // never throttled: the dependency is up and says so
    expect(dependency.throttling()).toMatchObject({ requests: 4, accepts: 4, probability: 0 });
    expect(ofType(events, 'pushback')).toHaveLength(4);
    close();
  });

  it('holds a second call in the concurrency limit’s queue and starts it when the first ends (SPEC X7)', async () => {
    const { dependency, events, close, client } = setup({
      p99Ms: 400,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 1 },
    });
    const ended: number[] = [];
    const first = say(client, { text: 'first', delayMs: 150 }).then(() => ended.push(Date.now()));
    const second = say(client, { text: 'second' });
    expect(dependency.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    // The queue is full: a third call is refused at once, never sent.
    const third = await failureOf(say(client, { text: 'third' }));
    expect(third.code).toBe(status.UNAVAILABLE);
    expect(isConcurrencyLimited(prazoErrorOf(third))).toBe(true);
    expect(prazoErrorOf(third)).toMatchObject({ reason: 'queue-full', limit: 1, queued: 1 });
    await Promise.all([first, second]);
    expect(arrivals.map((a) => a.text)).toEqual(['first', 'second']);
    // The second reached the server only once the first had ended (its status read by the client).
    expect(arrivals[1]!.at).toBeGreaterThanOrEqual(arrivals[0]!.at + 140);
    expect(arrivals[1]!.at).toBeGreaterThanOrEqual(ended[0]! - 1);
    // Its deadline is its own attempt's end, counted from when it started, not from when it queued.
    const timeoutMs = dependency.timeouts.responseMs;
    expect(Number(arrivals[1]!.epochHeader[0])).toBeGreaterThanOrEqual(arrivals[0]!.at + 140 + timeoutMs - 5);
    expect(dependency.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    expect(ofType(events, 'limited')).toEqual([
      expect.objectContaining({ reason: 'queue-full', kind: 'original' }),
    ]);
    close();
  });

  it("sends the attempt's end as the call's deadline: grpc-timeout and x-deadline-epoch-ms (SPEC C1, D1, D5, R6)", async () => {
    const { dependency, events, close, client } = setup({ p99Ms: 1_000 });
    const timeoutMs = dependency.timeouts.responseMs; // ceil(1000 × 1.4)
    expect(timeoutMs).toBe(1_400);
    let startedAt = 0;
    const mark = dependency.on((e) => {
      if (e.type === 'attempt') startedAt = Date.now();
    });
    // A far deadline (the call's own, and an ambient one): the attempt's timeout bounds the call.
    await runWithDeadline(Deadline.after(5_000), () => say(client, {}, { deadline: Date.now() + 10_000 }));
    const [far] = arrivals;
    const epoch = Number(far!.epochHeader[0]);
    expect(epoch).toBeGreaterThanOrEqual(startedAt + timeoutMs - 2);
    expect(epoch).toBeLessThanOrEqual(startedAt + timeoutMs + 1);
    // grpc-js's own grpc-timeout carries the same instant (relative: rebuilt at the server, ms-rounded).
    expect(Math.abs(far!.deadline! - epoch)).toBeLessThan(50);
    // A nearer deadline than the attempt's timeout: the deadline is the attempt's end.
    const near = Deadline.after(1_300);
    await runWithDeadline(near, () => say(client, {}));
    expect(Math.abs(Number(arrivals[1]!.epochHeader[0]) - Math.floor(near.epochMs()))).toBeLessThanOrEqual(1);
    // No deadline at all: the dependency's default (2 s), bounded by the attempt's timeout.
    startedAt = 0;
    await say(client, {});
    expect(Number(arrivals[2]!.epochHeader[0])).toBeLessThanOrEqual(startedAt + timeoutMs + 1);
    // A value the caller set itself is its own deadline, the call's ceiling (SPEC D5): a later one is
    // replaced by the attempt's end; one already gone (epoch 123) is refused before anything is sent.
    const later = new Metadata();
    later.set('x-deadline-epoch-ms', String(Date.now() + 60_000));
    startedAt = 0;
    await sayWith(client, later);
    expect(arrivals[3]!.epochHeader).toHaveLength(1);
    expect(Number(arrivals[3]!.epochHeader[0])).toBeLessThanOrEqual(startedAt + timeoutMs + 1);
    const gone = new Metadata();
    gone.set('x-deadline-epoch-ms', '123');
    const refused = await failureOf(sayWith(client, gone));
    expect(refused.code).toBe(status.DEADLINE_EXCEEDED);
    expect(isDeadlineInsufficient(prazoErrorOf(refused))).toBe(true);
    expect(arrivals).toHaveLength(4);
    expect(ofType(events, 'attempt')).toHaveLength(4);
    mark.dispose();
    close();
  });

  it("writes the attempt's deadline headers in the dependency's headerFormat: its name, Envoy's (SPEC D1, D5, D8)", async () => {
    const { dependency, close, client } = setup({
      p99Ms: 1_000,
      headerFormat: { epochMs: 'x-my-deadline', envoy: true },
    });
    const timeoutMs = dependency.timeouts.responseMs; // ceil(1000 × 1.4)
    let startedAt = 0;
    dependency.on((e) => {
      if (e.type === 'attempt') startedAt = Date.now();
    });
    // A far deadline: the attempt's timeout bounds the call, as in the default format.
    await runWithDeadline(Deadline.after(5_000), () => say(client, {}));
    const [far] = arrivals;
    expect(far!.epochHeader).toEqual([]); // the default name is not written beside the dependency's own
    const [epochText] = far!.metadata.get('x-my-deadline');
    const epoch = Number(epochText);
    expect(epochText).toMatch(/^\d+$/);
    expect(epoch).toBeGreaterThanOrEqual(startedAt + timeoutMs - 2);
    expect(epoch).toBeLessThanOrEqual(startedAt + timeoutMs + 1);
    expect(Math.abs(far!.deadline! - epoch)).toBeLessThan(50); // grpc-js's grpc-timeout: the same end
    // Envoy's relative header: the whole ms left to that end when the attempt was sent.
    const [envoyText] = far!.metadata.get('x-envoy-expected-rq-timeout-ms');
    expect(envoyText).toMatch(/^\d+$/);
    expect(Number(envoyText)).toBeGreaterThanOrEqual(timeoutMs - 100);
    expect(Number(envoyText)).toBeLessThanOrEqual(timeoutMs);
    // A header the caller set itself under one of the format's names is read as its own deadline
    // (SPEC D5): a later one is replaced by the attempt's end, each by its name ...
    const later = new Metadata();
    later.set('x-envoy-expected-rq-timeout-ms', '60000');
    later.set('x-my-deadline', String(Date.now() + 60_000));
    await runWithDeadline(Deadline.after(5_000), () => sayWith(client, later));
    expect(Number(arrivals[1]!.metadata.get('x-envoy-expected-rq-timeout-ms')[0])).toBeLessThanOrEqual(
      timeoutMs,
    );
    expect(Number(arrivals[1]!.metadata.get('x-my-deadline')[0])).toBeLessThanOrEqual(Date.now() + timeoutMs);
    // ... and 7 ms of Envoy's, less than the p99, is refused before anything is sent (D4).
    const near = new Metadata();
    near.set('x-envoy-expected-rq-timeout-ms', '7');
    const refused = await failureOf(runWithDeadline(Deadline.after(5_000), () => sayWith(client, near)));
    expect(isDeadlineInsufficient(prazoErrorOf(refused))).toBe(true);
    expect(arrivals).toHaveLength(2);
    close();
  });

  it("headerFormat { epochMs: false } sends no absolute header; grpc-timeout stays grpc-js's own (SPEC D1, D5)", async () => {
    const { close, client } = setup({ headerFormat: { epochMs: false } });
    await runWithDeadline(Deadline.after(5_000), () => say(client, {}));
    const [arrival] = arrivals;
    expect(arrival!.epochHeader).toEqual([]);
    expect(arrival!.metadata.get('x-envoy-expected-rq-timeout-ms')).toEqual([]);
    expect(arrival!.deadline).toBeDefined(); // gRPC's own deadline still travels
    close();
    // `grpcTimeout: true` adds no metadata of prazo's: grpc-js writes grpc-timeout from the deadline.
    const below = spy();
    const dependency = createDependency({ name: 'echo', p99Ms: 100, headerFormat: { grpcTimeout: true } });
    const spied = echoClient(echo.address, {
      interceptors: [deadlineInterceptor({ dependency }), below.interceptor],
    });
    await runWithDeadline(Deadline.after(5_000), () => say(spied, {}));
    expect(below.started[0]!.get('grpc-timeout')).toEqual([]);
    expect(below.started[0]!.get('x-deadline-epoch-ms')).toHaveLength(1);
    expect(arrivals[1]!.deadline).toBeDefined();
    spied.close();
  });

  it('ends an attempt at its timeout: DEADLINE_EXCEEDED, recorded as a timeout (SPEC C1, D6)', async () => {
    const { dependency, events, close, client } = setup({ p99Ms: 200 });
    const cut = await failureOf(say(client, { text: 'hang' }));
    expect(cut.code).toBe(status.DEADLINE_EXCEEDED);
    // The calibrated attempt timeout (ceil(200 × 1.4) = 280 ms) ran out, not the deadline.
    expect(isResponseTimeout(prazoErrorOf(cut))).toBe(true);
    expect(prazoErrorOf(cut)).toMatchObject({ dependency: 'echo', timeoutMs: 280 });
    // The deadline is nearer than the attempt's timeout: it is what ran out.
    const late = await runWithDeadline(Deadline.after(260), () => failureOf(say(client, { text: 'hang' })));
    expect(late.code).toBe(status.DEADLINE_EXCEEDED);
    expect(isDeadlineExceeded(prazoErrorOf(late))).toBe(true);
    expect(dependency.recorder.currentWindow()).toMatchObject({ timeouts: 2, successes: 0 });
    const ends = ofType(events, 'attempt-end');
    expect(ends.map((e) => e.outcome)).toEqual(['timeout', 'timeout']);
    expect(ends[0]!.latencyMs).toBeGreaterThanOrEqual(275);
    close();
  });

  it("takes a caller's own deadline metadata as the call's ceiling: the attempt ends by it, and it travels (SPEC D5)", async () => {
    const { dependency, events, close, client } = setup({ p99Ms: 500 }); // the attempt's timeout: 700 ms
    // Earlier than the ambient deadline and the attempt's timeout: the call's deadline, sent on.
    for (const [name, value] of [
      ['x-deadline-epoch-ms', () => String(Date.now() + 600)],
      ['grpc-timeout', () => '600m'],
    ] as const) {
      const metadata = new Metadata();
      const t0 = Date.now();
      metadata.set(name, value());
      await runWithDeadline(Deadline.after(5_000), () => sayWith(client, metadata));
      const arrival = arrivals.at(-1)!;
      expect(arrival.epochHeader, name).toHaveLength(1);
      expect(Number(arrival.epochHeader[0]), name).toBeLessThanOrEqual(t0 + 600 + 2);
      expect(Number(arrival.epochHeader[0]), name).toBeGreaterThan(t0 + 400);
      expect(Math.abs(arrival.deadline! - Number(arrival.epochHeader[0])), name).toBeLessThan(50);
    }
    // It ends the attempt: the deadline (the caller's), not the attempt's timeout, ran out.
    const metadata = new Metadata();
    metadata.set('x-deadline-epoch-ms', String(Date.now() + 600));
    const t0 = performance.now();
    const cut = await failureOf(
      runWithDeadline(Deadline.after(5_000), () => sayWith(client, metadata, { text: 'hang' })),
    );
    expect(cut.code).toBe(status.DEADLINE_EXCEEDED);
    expect(isDeadlineExceeded(prazoErrorOf(cut))).toBe(true);
    expect(performance.now() - t0).toBeLessThan(690);
    expect(dependency.recorder.currentWindow()).toMatchObject({ timeouts: 1, successes: 2 });
    expect(ofType(events, 'attempt')).toHaveLength(3);
    close();
  });

  it('a caller cancel ends the call and frees its slot: the queued call starts at once', async () => {
    const { dependency, events, close, client } = setup({
      p99Ms: 2_000,
      defaultDeadlineMs: 10_000,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 2 },
    });
    const calls = client as unknown as {
      say: (req: SayRequest, cb: (e: (Error & { code?: number }) | null) => void) => ClientUnaryCall;
    };
    const outcome = (req: SayRequest) => {
      let call!: ClientUnaryCall;
      const done = new Promise<(Error & { code?: number }) | null>((resolve) => {
        call = calls.say(req, (e) => resolve(e));
      });
      return { call, done };
    };
    const slow = outcome({ text: 'slow', delayMs: 2_000 });
    const queued = outcome({ text: 'queued' });
    const next = outcome({ text: 'next' });
    expect(dependency.concurrency()).toMatchObject({ inFlight: 1, queued: 2 });
    // A queued call cancelled leaves the queue: it never reaches the server.
    queued.call.cancel();
    expect((await queued.done)?.code).toBe(status.CANCELLED);
    expect(dependency.concurrency()).toMatchObject({ inFlight: 1, queued: 1 });
    // The slow one reached the server; cancelled, its slot goes to the next call at once.
    while (arrivals.length === 0) await new Promise((r) => setTimeout(r, 5));
    const cancelledAt = Date.now();
    slow.call.cancel();
    expect((await slow.done)?.code).toBe(status.CANCELLED);
    expect(await next.done).toBeNull();
    expect(arrivals.map((a) => a.text)).toEqual(['slow', 'next']);
    expect(arrivals[1]!.at - cancelledAt).toBeLessThan(1_000);
    expect(dependency.concurrency()).toMatchObject({ inFlight: 0, queued: 0 });
    // Nothing learnt from the caller's own end: not recorded, an attempt-end `cancelled`.
    expect(dependency.recorder.currentWindow()).toMatchObject({ successes: 1, errors: 0, timeouts: 0 });
    expect(ofType(events, 'attempt-end').map((e) => e.outcome)).toEqual(['cancelled', 'success']);
    close();
  });

  it('carries a server stream as one attempt, ended at its status; a stream read while queued starts later', async () => {
    const { dependency, events, close, client } = setup({
      p99Ms: 500,
      concurrencyLimit: { maxInFlight: 1, maxQueue: 1 },
    });
    const blocker = say(client, { delayMs: 100 });
    const stream = (
      client as unknown as { count: (req: SayRequest) => ClientReadableStream<SayReply> }
    ).count({ count: 3, delayMs: 30 });
    const texts: string[] = [];
    stream.on('data', (reply: SayReply) => texts.push(reply.text)); // reads before its channel call exists
    await new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    await blocker;
    expect(texts).toEqual(['#1', '#2', '#3']);
    expect(arrivals.map((a) => a.text)).toEqual(['ok', 'count']);
    const ends = ofType(events, 'attempt-end');
    expect(ends.map((e) => e.outcome)).toEqual(['success', 'success']);
    expect(ends[1]!.latencyMs).toBeGreaterThanOrEqual(55); // the whole stream: three messages 30 ms apart
    expect(dependency.recorder.currentWindow().successes).toBe(2);
    close();
  });

  it('never retries nor hedges a call (grpc-js retries below): one attempt each, whatever the dependency allows', async () => {
    const { dependency, events, close, client } = setup({ attempts: 3, hedge: true });
    const error = await failureOf(say(client, { text: 'fail' }));
    expect(error.code).toBe(status.UNAVAILABLE);
    await say(client, { delayMs: 120 }); // past any hedge delay
    expect(arrivals.map((a) => a.text)).toEqual(['fail', 'ok']);
    expect(ofType(events, 'attempt')).toHaveLength(2);
    expect(dependency.budget.state()).toMatchObject({ extras: 0 });
    close();
  });

  it("is traced through the executor's seam: the call and its attempt, with gRPC's attributes", async () => {
    const { dependency, close, client } = setup();
    const seen: Array<{ what: string; attributes: unknown }> = [];
    const tracer: CallTracer = {
      startCall: (_name, _remaining, attributes) => {
        seen.push({ what: 'call', attributes });
        return {
          attempt: (kind, _n, _left, _timeout, _instance, run) => {
            seen.push({ what: `attempt ${kind}`, attributes: undefined });
            run();
            return {
              resume: (fn) => fn(),
              end: (outcome, _ok, _value, attributes) =>
                seen.push({ what: `attempt ${outcome}`, attributes }),
            };
          },
          event: () => undefined,
          end: (ok, _value, attributes) => seen.push({ what: `call ${ok}`, attributes }),
        };
      },
    };
    executorOf(dependency)!.plan.events.tracer = tracer;
    await say(client, {});
    expect(seen).toEqual([
      {
        what: 'call',
        attributes: { 'rpc.system': 'grpc', 'rpc.service': 'prazo.test.Echo', 'rpc.method': 'Say' },
      },
      { what: 'attempt original', attributes: undefined },
      { what: 'attempt success', attributes: { 'rpc.grpc.status_code': status.OK } },
      { what: 'call true', attributes: { 'rpc.grpc.status_code': status.OK } },
    ]);
    close();
  });

  it('without `dependency`, calls take the thin path: nothing reaches an executor', async () => {
    const dependency = createDependency({ name: 'echo', p99Ms: 100 });
    const client = echoClient(echo.address, { interceptors: [deadlineInterceptor({ name: 'echo' })] });
    await say(client, {});
    expect(arrivals[0]!.epochHeader).toEqual([]); // no deadline, none sent (as before)
    expect(dependency.recorder.currentWindow().count).toBe(0);
    client.close();
  });
});

describe('deadlineInterceptor({ dependency }) options', () => {
  const problemsOf = (options: unknown): string[] => {
    try {
      deadlineInterceptor(options as never);
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
      return [...(error as { problems: string[] }).problems];
    }
    throw new Error('expected the options to be refused');
  };
  const clock = new FakeClock();
  const dependency: Dependency = createDependency({ name: 'echo', p99Ms: 100, clock });

  it('refuses an unknown key with a "did you mean"', () => {
    expect(problemsOf({ dependency, dependancy: dependency })).toEqual([
      expect.stringMatching(/`dependancy`.*did you mean `dependency`/),
    ]);
  });

  it("refuses the executor's own options beside it, every problem in one error", () => {
    const problems = problemsOf({ dependency, p99Ms: 80, throttle: false, random: () => 0, name: 'other' });
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/`p99Ms`.*createDependency/);
    expect(problems.join('\n')).toMatch(/`throttle`/);
    expect(problems.join('\n')).toMatch(/`random`/);
    // The deadline headers are the dependency's `headerFormat` (SPEC D1, D5).
    expect(problemsOf({ dependency, deadlineHeaders: { envoy: true } })).toEqual([
      expect.stringMatching(/`deadlineHeaders` is the executor's.*set it with createDependency\(\)/),
    ]);
    expect(problems.join('\n')).toMatch(/`name`.*\(other\) differs from the dependency's \(echo\)/);
    expect(problemsOf({ dependency, clock: systemClock })).toEqual([
      expect.stringMatching(/`clock`.*differs/),
    ]);
  });

  it('refuses a dependency whose headerFormat names a header gRPC metadata cannot carry (grpc-js would throw)', () => {
    // A valid HTTP header name (RFC 9110 token), not a gRPC metadata key.
    for (const epochMs of ['x-deadline!', 'x-deadline-bin']) {
      const odd = createDependency({ name: 'echo', p99Ms: 100, clock, headerFormat: { epochMs } });
      expect(problemsOf({ dependency: odd })).toEqual([
        expect.stringMatching(/`dependency` has headerFormat\.epochMs .* not a gRPC metadata key/),
      ]);
    }
    // Upper case is lowered by grpc-js: taken.
    const upper = createDependency({
      name: 'echo',
      p99Ms: 100,
      clock,
      headerFormat: { epochMs: 'X-Deadline' },
    });
    expect(() => deadlineInterceptor({ dependency: upper })).not.toThrow();
  });

  it('refuses a dependency that is not an executor', () => {
    expect(problemsOf({ dependency: { name: 'echo', on: () => undefined } })).toEqual([
      expect.stringMatching(/`dependency` must be an executor made with createDependency\(\)/),
    ]);
  });

  it('takes its own name and clock when they are the executor’s', () => {
    const interceptor = deadlineInterceptor({ dependency, name: 'echo', clock });
    expect(interceptor.events.name).toBe('echo');
    expect(interceptor.throttling()).toEqual({ requests: 0, accepts: 0, probability: 0 });
  });
});
