import { Agent, request } from 'undici';
import type { Clock, Timer } from '../../clock/clock.js';
import { DemoHeaders } from '../constants.js';
import type { UserResult } from '../types.js';

/**
 * Open-loop user load (SPEC X1): requests leave at a fixed offered rate whatever happens to the ones
 * before them, as real users do (a closed loop, which waits for an answer before the next request,
 * slows down exactly when the system does and hides the incident). Bounded in count and in time:
 * `rate × durationMs` requests per route, each abandoned at the user's deadline.
 */

export interface RouteLoad<R extends string = UserResult['route']> {
  readonly route: R;
  readonly path: string;
  /** Requests per second. */
  readonly rate: number;
  /** When this route's first request leaves, in ms from the start (default 0). */
  readonly offsetMs?: number;
}

/** One request's result, for routes named `R` (the demo's `UserResult` by default). */
export type LoadResult<R extends string = UserResult['route']> = Omit<UserResult, 'route'> & {
  readonly route: R;
};

export interface LoadOptions<R extends string = UserResult['route']> {
  /** The gateway's origin. */
  readonly origin: string;
  readonly routes: readonly RouteLoad<R>[];
  readonly durationMs: number;
  /** The user's deadline: the request is abandoned (its socket closed) at this age. */
  readonly deadlineMs: number;
  readonly clock: Clock;
  /** Stops sending and abandons what is in flight. */
  readonly signal?: AbortSignal;
  /** Called as each request settles (progress display). */
  readonly onResult?: (result: LoadResult<R>) => void;
  /** Connections per origin; default unbounded (each request that finds none busy-free opens one). */
  readonly connections?: number;
  /** Send the give-up time the demo's services account waste with (default true). */
  readonly markGiveUp?: boolean;
}

interface Due<R extends string> {
  readonly load: RouteLoad<R>;
  readonly atMs: number;
}

/** The send schedule: every request of every route, in time order (offsets from the start, in ms). */
export function schedule<R extends string>(routes: readonly RouteLoad<R>[], durationMs: number): Due<R>[] {
  const all: Due<R>[] = [];
  for (const load of routes) {
    if (!(load.rate > 0)) continue;
    const offsetMs = Math.max(0, load.offsetMs ?? 0);
    const count = Math.floor((load.rate * durationMs) / 1000);
    const gap = 1000 / load.rate;
    for (let i = 0; i < count && offsetMs + i * gap < durationMs; i += 1)
      all.push({ load, atMs: offsetMs + i * gap });
  }
  return all.sort((a, b) => a.atMs - b.atMs);
}

/** Runs the load; resolves with every request's result once the last one has settled. */
export async function runLoad<R extends string = UserResult['route']>(
  options: LoadOptions<R>,
): Promise<LoadResult<R>[]> {
  const { clock, deadlineMs, origin } = options;
  const agent = new Agent({
    connections: options.connections ?? null,
    pipelining: 1,
    keepAliveTimeout: 10_000,
  });
  const plan = schedule(options.routes, options.durationMs);
  const results: LoadResult<R>[] = [];
  const pending = new Set<Promise<void>>();
  const inFlight = new Set<AbortController>();
  const start = clock.now();
  let next = 0;
  let timer: Timer | undefined;

  const send = (due: Due<R>): void => {
    const sentAt = clock.now();
    const controller = new AbortController();
    inFlight.add(controller);
    const giveUp = clock.setTimer(() => controller.abort(), deadlineMs);
    const headers =
      options.markGiveUp === false
        ? {}
        : { [DemoHeaders.giveUp]: String(Math.round(clock.epochNow() + deadlineMs)) };
    const settle = (outcome: UserResult['outcome'], status: number): void => {
      clock.clearTimer(giveUp);
      inFlight.delete(controller);
      // A user who gave up waited the whole deadline (a timer may fire a fraction of a ms early).
      const latencyMs = outcome === 'timeout' ? deadlineMs : Math.min(deadlineMs, clock.now() - sentAt);
      const result: LoadResult<R> = {
        route: due.load.route,
        sentMs: sentAt - start,
        latencyMs,
        outcome,
        status,
      };
      results.push(result);
      options.onResult?.(result);
    };
    const work = (async () => {
      try {
        const res = await request(`${origin}${due.load.path}`, {
          dispatcher: agent,
          headers,
          signal: controller.signal,
        });
        await res.body.text();
        if (controller.signal.aborted) settle('timeout', res.statusCode);
        else settle(res.statusCode === 200 ? 'ok' : 'error', res.statusCode);
      } catch {
        settle(controller.signal.aborted ? 'timeout' : 'error', 0);
      }
    })();
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };

  await new Promise<void>((resolve) => {
    const done = (): void => {
      if (timer !== undefined) clock.clearTimer(timer);
      options.signal?.removeEventListener('abort', done);
      resolve();
    };
    const tick = (): void => {
      timer = undefined;
      const elapsed = clock.now() - start;
      while (!options.signal?.aborted && next < plan.length && plan[next]!.atMs <= elapsed)
        send(plan[next++]!);
      if (options.signal?.aborted || next >= plan.length) done();
      else timer = clock.setTimer(tick, plan[next]!.atMs - elapsed);
    };
    options.signal?.addEventListener('abort', done, { once: true });
    tick();
  });
  if (options.signal?.aborted) for (const controller of inFlight) controller.abort();
  while (pending.size > 0) await Promise.all([...pending]);
  await agent.destroy();
  return results;
}
