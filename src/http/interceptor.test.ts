import { Agent, type Dispatcher, getGlobalDispatcher, request, setGlobalDispatcher } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { systemClock } from '../clock/system.js';
import { runWithDeadline } from '../deadline/ambient.js';
import { Deadline } from '../deadline/deadline.js';
import type { DependencyEvent } from '../dependency/types.js';
import { isPrazoError } from '../errors/base.js';
import { InvalidOptionsError } from '../errors/options.js';
import { createLatencyRecorder } from '../latency/recorder.js';
import { interceptor } from './interceptor.js';
import type { HttpDependencyOptions } from './options.js';
import { faults, type Handler, startServer, type TestServer } from './servers.test-helpers.js';

/**
 * prazo/http inside the caller's own stack (SPEC X4): the interceptor installed as the global
 * dispatcher, driven by Node's global `fetch` (the undici bundled in Node, whose handler may speak the
 * legacy API) and by `undici.request`, against real loopback servers that count what reaches them.
 */

const cleanup: Array<() => Promise<void>> = [];
const original = getGlobalDispatcher();
afterEach(async () => {
  setGlobalDispatcher(original);
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** Installs `interceptor({ dependencies: { [server.origin]: entry } })` as the global dispatcher. */
async function install(handler: Handler, entry: Partial<HttpDependencyOptions> = {}) {
  const server = await startServer(handler);
  const prazo = interceptor({
    dependencies: { [server.origin]: { name: 'inventory', p99Ms: 100, ...entry } as HttpDependencyOptions },
  });
  const agent = new Agent();
  setGlobalDispatcher(agent.compose(prazo));
  cleanup.push(
    () => server.close(),
    () => agent.destroy(),
  );
  const events: DependencyEvent[] = [];
  prazo.on((event) => events.push(event));
  return { server, prazo, agent, events };
}

const causeOf = (error: unknown): { code?: string; phase?: string; timeoutMs?: number } =>
  ((error as { cause?: unknown }).cause ?? error) as never;

const fetchOutcome = async (url: string, init?: RequestInit): Promise<string> => {
  try {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return String(res.status);
  } catch (error) {
    return String(causeOf(error).code ?? error);
  }
};

describe('global fetch through setGlobalDispatcher(agent.compose(interceptor(...)))', () => {
  it('503 everywhere: the load on the dependency stays ≤ 1.1× the calls (SPEC R1)', async () => {
    // The retry budget alone (the adaptive throttle would refuse most of these calls: issue 23).
    const { server } = await install(faults.status(503), { attempts: 3, throttle: false });
    // Enough calls that the budget's 10% passes its floor (3 extra per second over its 10 s window:
    // 30 a window) while the run stays within one window.
    const calls = 600;
    const started = systemClock.now();
    for (let i = 0; i < calls; i += 50) {
      await Promise.all(Array.from({ length: 50 }, () => fetchOutcome(`${server.origin}/stock`)));
    }
    const elapsedMs = systemClock.now() - started;
    expect(server.seen.length).toBeGreaterThanOrEqual(calls);
    // The budget's invariant, per 10 s window: extras ≤ max(30, 10% of its originals). A run that a
    // loaded machine stretches over several windows may spend the floor in each of them (two more
    // windows than it fully spans, as the window slides by bucket): the bound says so, and is
    // exactly 1.1× whenever the run fits one window, as it does on a quiet machine.
    const windows = elapsedMs < 10_000 ? 1 : Math.ceil(elapsedMs / 10_000) + 1;
    const extras = server.seen.length - calls;
    expect(extras, `${elapsedMs.toFixed(0)} ms, ${windows} window(s)`).toBeLessThanOrEqual(
      Math.max(0.1 * calls, 30 * windows),
    );
  });

  it('a POST reaches the server once, a keyed one is retried with the same key (SPEC R5)', async () => {
    const { server } = await install(faults.sequence(faults.status(503), faults.ok('done')));
    expect(await fetchOutcome(`${server.origin}/orders`, { method: 'POST', body: 'x' })).toBe('503');
    expect(server.seen).toHaveLength(1);
    // fetch hands its body over as a stream: sent once even with a key (it cannot be replayed)
    const keyed = await fetchOutcome(`${server.origin}/orders`, {
      method: 'POST',
      body: 'x',
      headers: { 'idempotency-key': 'order-7' },
    });
    expect(keyed).toBe('200');
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.headers['idempotency-key']).toBe('order-7');
  });

  it('a GET is retried: the first 503 is drained, never shown to fetch', async () => {
    const { server, events } = await install(faults.sequence(faults.status(503), faults.ok('fresh')));
    const res = await fetch(`${server.origin}/stock`);
    expect([res.status, await res.text()]).toEqual([200, 'fresh']);
    expect(server.seen).toHaveLength(2);
    expect(events.filter((e) => e.type === 'attempt').map((e) => e.type === 'attempt' && e.kind)).toEqual([
      'original',
      'retry',
    ]);
  });

  it('the deadline header arrives, never later than the caller’s (SPEC D1, D5)', async () => {
    const { server } = await install(faults.ok());
    const deadline = Deadline.after(800);
    const callerEpoch = deadline.epochMs();
    await runWithDeadline(deadline, () => fetchOutcome(`${server.origin}/a`));
    const sent = Number(server.seen[0]!.headers['x-deadline-epoch-ms']);
    expect(sent).toBeLessThanOrEqual(callerEpoch + 1); // Date.now()'s 1 ms resolution
    // The attempt's own limit, ceil(100 × 1.4) = 140 ms, is what the next hop is told.
    expect(sent).toBeGreaterThan(Date.now() - 1_000);
    expect(callerEpoch - sent).toBeGreaterThan(500);
    // A caller's own header is replaced by the earlier one prazo computed.
    await runWithDeadline(Deadline.after(800), () =>
      fetchOutcome(`${server.origin}/b`, { headers: { 'x-deadline-epoch-ms': String(Date.now() + 60_000) } }),
    );
    expect(Number(server.seen[1]!.headers['x-deadline-epoch-ms'])).toBeLessThan(Date.now() + 1_000);
  });

  it('a silent server: RESPONSE_TIMEOUT near ceil(p99 × 1.4) (SPEC C1, D6)', async () => {
    const { server } = await install(faults.silent(), { attempts: 1 });
    const started = systemClock.now();
    const code = await fetchOutcome(`${server.origin}/slow`);
    const elapsed = systemClock.now() - started;
    expect(code).toBe('RESPONSE_TIMEOUT');
    expect(elapsed).toBeGreaterThanOrEqual(139);
    expect(elapsed).toBeLessThan(140 + 250);
  });

  it('too little time left: DEADLINE_INSUFFICIENT, the server never touched (SPEC D4)', async () => {
    const { server } = await install(faults.ok());
    const code = await runWithDeadline(Deadline.after(50), () => fetchOutcome(`${server.origin}/x`));
    expect(code).toBe('DEADLINE_INSUFFICIENT');
    expect(server.connections).toBe(0);
  });

  it('a prazo failure rejects fetch as WHATWG fetch reports network errors: TypeError, the typed error as cause', async () => {
    const { server } = await install(faults.ok());
    const error = await runWithDeadline(Deadline.after(50), () =>
      fetch(`${server.origin}/x`).then(
        () => undefined,
        (e: unknown) => e,
      ),
    );
    expect(error).toBeInstanceOf(TypeError);
    expect(isPrazoError((error as { cause?: unknown }).cause)).toBe(true);
    expect((error as { cause: { code: string } }).cause.code).toBe('DEADLINE_INSUFFICIENT');
    expect(server.connections).toBe(0);
  });

  it('an unknown origin passes through untouched, and is bounded only by an ambient deadline', async () => {
    const { server: known } = await install(faults.ok());
    const other = await startServer(faults.status(503));
    cleanup.push(() => other.close());
    expect(await fetchOutcome(`${other.origin}/z`, { headers: { 'x-deadline-epoch-ms': '42' } })).toBe('503');
    expect(other.seen).toHaveLength(1); // not retried
    expect(other.seen[0]!.headers['x-deadline-epoch-ms']).toBe('42'); // untouched
    const deadline = Deadline.after(1_000);
    await runWithDeadline(deadline, () => fetchOutcome(`${other.origin}/z`));
    // Date.now() has a 1 ms resolution: the caller's own epoch reading is that precise, no more.
    expect(Number(other.seen[1]!.headers['x-deadline-epoch-ms'])).toBeLessThanOrEqual(deadline.epochMs() + 1);
    expect(other.seen).toHaveLength(2);
    expect(known.seen).toHaveLength(0);
  });

  it('an ambient deadline bounds an unknown origin: DEADLINE_EXCEEDED, the connection torn down', async () => {
    await install(faults.ok());
    const silent = await startServer(faults.silent());
    cleanup.push(() => silent.close());
    const started = systemClock.now();
    const code = await runWithDeadline(Deadline.after(200), () => fetchOutcome(`${silent.origin}/q`));
    expect(code).toBe('DEADLINE_EXCEEDED');
    expect(systemClock.now() - started).toBeLessThan(200 + 250);
    await waitFor(() => silent.seen[0]?.socketClosed === true);
  });
});

describe('undici.request through agent.compose(interceptor(...))', () => {
  let server: TestServer;
  const setup = async (handler: Handler, entry: Partial<HttpDependencyOptions> = {}) => {
    server = await startServer(handler);
    const prazo = interceptor({
      dependencies: { [server.origin]: { name: 'inventory', p99Ms: 100, ...entry } as HttpDependencyOptions },
    });
    const dispatcher = new Agent().compose(prazo);
    cleanup.push(
      () => server.close(),
      () => dispatcher.destroy(),
    );
    return { dispatcher, prazo };
  };

  it('per-call options ride in the dispatch options: `{ prazo: { deadline, idempotent } }`', async () => {
    const { dispatcher } = await setup(faults.sequence(faults.status(503), faults.ok('second')));
    const res = await request(`${server.origin}/p`, {
      dispatcher,
      method: 'POST',
      body: 'x',
      prazo: { idempotent: true, deadline: 1_500 },
    } as never);
    expect([res.statusCode, await res.body.text()]).toEqual([200, 'second']);
    expect(server.seen).toHaveLength(2);
    const epoch = Number(server.seen[0]!.headers['x-deadline-epoch-ms']);
    expect(epoch).toBeLessThanOrEqual(Date.now() + 1_500);
  });

  it('the dispatchers below never see `prazo`: each attempt of a managed call, and a dispatch passed through', async () => {
    server = await startServer(faults.sequence(faults.status(503), faults.ok('second')));
    const other = await startServer(faults.ok('other'));
    const seen: Record<string, unknown>[] = [];
    const below: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
      seen.push({ ...opts });
      return dispatch(opts, handler);
    };
    const prazo = interceptor({ dependencies: { [server.origin]: { name: 'inventory', p99Ms: 100 } } });
    const dispatcher = new Agent().compose(below).compose(prazo);
    cleanup.push(
      () => server.close(),
      () => other.close(),
      () => dispatcher.destroy(),
    );
    const res = await request(`${server.origin}/a`, {
      dispatcher,
      headers: { 'x-mine': '1' },
      prazo: { deadline: 1_500 },
    } as never);
    expect(await res.body.text()).toBe('second');
    const passed = await request(`${other.origin}/b`, { dispatcher, prazo: { deadline: 1_500 } } as never);
    expect(await passed.body.text()).toBe('other');
    expect(seen).toHaveLength(3); // two attempts (the 503 retried), one call passed through
    for (const opts of seen) expect(Object.keys(opts)).not.toContain('prazo');
    expect(seen.map((o) => o.path)).toEqual(['/a', '/a', '/b']);
    expect(server.seen.map((r) => r.headers['x-mine'])).toEqual(['1', '1']);
  });

  it('rejects an unknown per-call option and a bad value, before any socket', async () => {
    const { dispatcher } = await setup(faults.ok());
    const bad = (prazo: object) => request(`${server.origin}/`, { dispatcher, prazo } as never);
    await expect(bad({ dedline: 100 })).rejects.toThrow(
      /unknown option `dedline`; did you mean `deadline`\?/,
    );
    await expect(bad({ deadlnie: 100 })).rejects.toThrow(
      /unknown option `deadlnie`; did you mean `deadline`\?/,
    );
    await expect(bad({ deadline: -1 })).rejects.toBeInstanceOf(InvalidOptionsError);
    expect(server.connections).toBe(0);
  });

  it('streams the winning response body through, with back-pressure', async () => {
    const big = Buffer.alloc(4 * 1024 * 1024, 'a');
    const { dispatcher } = await setup((_req, res) => res.end(big), { bodyTimeoutMs: 5_000 });
    const res = await request(`${server.origin}/big`, { dispatcher });
    let total = 0;
    for await (const chunk of res.body) {
      total += (chunk as Buffer).length;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(total).toBe(big.length);
  });

  it('hedges after the live p95; the loser is cancelled and its connection closed (SPEC H1, H3)', async () => {
    // The recorder's windows run on a fake clock so the test decides when its window is full.
    const windows = new FakeClock();
    const recorder = createLatencyRecorder({ clock: windows, windowMs: 1_000, minSamples: 10 });
    let stall = -1;
    const { dispatcher, prazo } = await setup(
      (_req, res, index) => {
        if (index !== stall) res.end(index > stall && stall >= 0 ? 'hedged' : 'warm');
      },
      { p99Ms: 400, hedge: { minDelayMs: 30 }, recorder },
    );
    for (let i = 0; i < 20; i += 1)
      await (await request(`${server.origin}/warm`, { dispatcher })).body.text();
    windows.advance(1_000); // the warm-up window is now the last full one: a live p95 exists
    const events: DependencyEvent[] = [];
    prazo.on((e) => events.push(e));
    stall = 20; // the next copy never answers
    const started = systemClock.now();
    const res = await request(`${server.origin}/h`, { dispatcher });
    expect(await res.body.text()).toBe('hedged');
    expect(systemClock.now() - started).toBeLessThan(400);
    expect(events.filter((e) => e.type === 'attempt').map((e) => e.type === 'attempt' && e.kind)).toEqual([
      'original',
      'hedge',
    ]);
    expect(events.some((e) => e.type === 'hedge-won')).toBe(true);
    expect(prazo.dependency(server.origin)?.budget.state().extras).toBe(1); // paid from the budget
    await waitFor(() => server.seen[20]?.socketClosed === true); // the losing copy was torn down
  });

  it('the caller aborting ends every attempt with its reason', async () => {
    const { dispatcher } = await setup(faults.silent(), { p99Ms: 1_000 });
    const controller = new AbortController();
    const pending = request(`${server.origin}/`, { dispatcher, signal: controller.signal });
    await waitFor(() => server.seen.length === 1);
    controller.abort(new Error('caller left'));
    await expect(pending).rejects.toThrow('caller left');
    await waitFor(() => server.seen[0]!.socketClosed);
  });

  it('a function maps origins known only at run time; the others pass through', async () => {
    server = await startServer(faults.sequence(faults.status(503), faults.ok('run-time')));
    const asked: string[] = [];
    const prazo = interceptor({
      dependencies: (origin) => {
        asked.push(origin);
        return origin === server.origin ? { name: 'late', p99Ms: 100 } : undefined;
      },
    });
    const dispatcher = new Agent().compose(prazo);
    cleanup.push(
      () => server.close(),
      () => dispatcher.destroy(),
    );
    for (let i = 0; i < 2; i += 1) {
      const res = await request(`${server.origin}/`, { dispatcher });
      await res.body.text();
    }
    expect(asked).toEqual([server.origin]); // asked once, remembered
    expect(prazo.dependency(server.origin)?.name).toBe('late');
    expect(server.seen).toHaveLength(3); // the 503 was retried once
  });

  it('an origin met under two spellings is one dependency: one executor, one budget, one answer from the function', async () => {
    server = await startServer(faults.ok('one'));
    const asked: string[] = [];
    const prazo = interceptor({
      dependencies: (origin) => {
        asked.push(origin);
        return { name: 'spelt', p99Ms: 100 };
      },
    });
    const dispatcher = new Agent().compose(prazo);
    cleanup.push(
      () => server.close(),
      () => dispatcher.destroy(),
    );
    const loud = `${server.origin.toUpperCase()}/`; // HTTP://127.0.0.1:PORT/
    for (const origin of [loud, server.origin, loud]) {
      const res = await dispatcher.request({ origin, path: '/', method: 'GET' });
      expect(await res.body.text()).toBe('one');
    }
    expect(asked).toEqual([server.origin]);
    expect(prazo.dependencies()).toHaveLength(1);
    expect(prazo.dependency(loud)).toBe(prazo.dependency(server.origin));
  });
});

describe('interceptor options (validated once, every problem listed)', () => {
  it('refuses bad origins, bad entries and unknown keys together', () => {
    let problems: readonly string[] = [];
    try {
      interceptor({
        dependencies: {
          'ftp://x': { name: 'a', p99Ms: 10 },
          'http://ok:1/path': { name: 'b', p99Ms: 10 },
          'http://ok:2': { name: 'c', p99Ms: -1, atempts: 2 } as never,
        },
        dedlineHeaders: {},
      } as never);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      problems = (error as InvalidOptionsError).problems;
    }
    expect(problems.join('\n')).toContain('unknown option `dedlineHeaders`');
    expect(problems.join('\n')).toContain('"ftp://x" is not an origin');
    expect(problems.join('\n')).toContain('"http://ok:1/path" is not an origin');
    expect(problems.join('\n')).toContain("`dependencies['http://ok:2']`: unknown option `atempts`");
    expect(problems.join('\n')).toContain('`p99Ms` must be a finite number');
  });

  it('refuses two keys naming one origin, both named, with the other problems', () => {
    let problems: readonly string[] = [];
    try {
      interceptor({
        dependencies: {
          'http://x.test:80': { name: 'first', p99Ms: 10 },
          'HTTP://X.TEST': { name: 'second', p99Ms: 10 },
          'http://y.test': { name: 'third', p99Ms: -1 },
        },
      });
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      problems = (error as InvalidOptionsError).problems;
    }
    expect(problems.join('\n')).toContain(
      '"HTTP://X.TEST" repeats "http://x.test:80" (both are http://x.test)',
    );
    expect(problems.join('\n')).toContain('`p99Ms` must be a finite number');
    // One spelling each is accepted.
    const prazo = interceptor({ dependencies: { 'http://x.test:80': { name: 'first', p99Ms: 10 } } });
    expect(prazo.dependencies().map((d) => d.name)).toEqual(['first']);
  });
});

describe('an origin passed through: the per-call options and the deadline rule still hold', () => {
  /** `interceptor({})` over an Agent, and a server of its own: every origin is passed through. */
  const passing = async (handler: Handler) => {
    const server = await startServer(handler);
    const dispatcher = new Agent().compose(interceptor({}));
    cleanup.push(
      () => server.close(),
      () => dispatcher.destroy(),
    );
    return { server, dispatcher };
  };

  /** One dispatch through `interceptor({ clock })` to a dispatcher below that only counts. */
  const dispatchWith = (clock: FakeClock, prazo: object | undefined, ambient?: Deadline) => {
    let sent = 0;
    let error: (Error & { code?: string }) | undefined;
    const dispatch = interceptor({ clock })((() => {
      sent += 1;
      return true;
    }) as never);
    const run = () =>
      dispatch(
        { origin: 'http://passing.test', path: '/', method: 'GET', prazo } as never,
        {
          onRequestStart() {},
          onResponseError(_c: unknown, e: Error) {
            error = e;
          },
        } as never,
      );
    if (ambient === undefined) run();
    else runWithDeadline(ambient, run);
    return { sent, error };
  };

  it('under 1 ms left (per call, ambient, or a time left that cannot be read): DEADLINE_EXCEEDED, nothing sent; 1 ms: sent (SPEC D4)', () => {
    const clock = new FakeClock();
    for (const left of [0, 0.3, 0.999]) {
      const perCall = dispatchWith(clock, { deadline: Deadline.after(left, { clock }) });
      expect([perCall.sent, perCall.error?.code], `${left} ms`).toEqual([0, 'DEADLINE_EXCEEDED']);
      const ambient = dispatchWith(clock, undefined, Deadline.after(left, { clock }));
      expect([ambient.sent, ambient.error?.code], `ambient ${left} ms`).toEqual([0, 'DEADLINE_EXCEEDED']);
    }
    const unreadable = Object.assign(Deadline.after(1_000, { clock }), { remainingMs: () => Number.NaN });
    expect(dispatchWith(clock, undefined, unreadable).error?.code).toBe('DEADLINE_EXCEEDED');
    const enough = dispatchWith(clock, { deadline: Deadline.after(1, { clock }) });
    expect([enough.sent, enough.error]).toEqual([1, undefined]);
  });

  it('a per-call idempotencyKey travels, with a deadline or without (then with no deadline header); `true` makes one (SPEC R5)', async () => {
    const { server, dispatcher } = await passing(faults.ok());
    const send = async (prazo: object, headers?: Record<string, string>) => {
      const res = await request(server.origin, {
        dispatcher,
        method: 'POST',
        body: 'x',
        headers,
        prazo,
      } as never);
      await res.body.text();
      return server.seen.at(-1)!.headers;
    };
    const bare = await send({ idempotencyKey: 'order-7' });
    expect(bare['idempotency-key']).toBe('order-7');
    expect(bare['x-deadline-epoch-ms']).toBeUndefined(); // nothing bounds it: no limit to carry
    const bounded = await send({ idempotencyKey: 'order-8', deadline: 1_000 });
    expect(bounded['idempotency-key']).toBe('order-8');
    expect(Number(bounded['x-deadline-epoch-ms'])).toBeLessThanOrEqual(Date.now() + 1_000);
    expect((await send({ idempotencyKey: true }))['idempotency-key']).toMatch(/^[\x21-\x7e]{1,255}$/);
    // The caller's own header is the key it gave: it stays.
    expect((await send({ idempotencyKey: 'other' }, { 'idempotency-key': 'mine' }))['idempotency-key']).toBe(
      'mine',
    );
    expect(server.seen).toHaveLength(4); // each sent once
  });

  it('a per-call responseTimeoutMs bounds a silent origin: RESPONSE_TIMEOUT near it, one attempt (SPEC D6)', async () => {
    const { server, dispatcher } = await passing(faults.silent());
    for (const prazo of [{ responseTimeoutMs: 100 }, { responseTimeoutMs: 100, deadline: 5_000 }]) {
      const started = systemClock.now();
      // undici's own head timer as a backstop: a call prazo does not bound fails in 3 s, not at 300 s.
      const error = await request(server.origin, { dispatcher, headersTimeout: 3_000, prazo } as never).catch(
        (e: unknown) => e,
      );
      const elapsed = systemClock.now() - started;
      expect((error as { code?: string }).code).toBe('RESPONSE_TIMEOUT');
      expect(elapsed).toBeGreaterThanOrEqual(95);
      expect(elapsed).toBeLessThan(100 + 900); // a loaded machine's margin; undici's own is 300 s
    }
    expect(server.seen).toHaveLength(2); // never retried
  });
});

async function waitFor(check: () => boolean, ms = 3_000): Promise<void> {
  const until = systemClock.now() + ms;
  while (!check()) {
    if (systemClock.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => systemClock.setTimer(() => resolve(undefined), 10));
  }
}
