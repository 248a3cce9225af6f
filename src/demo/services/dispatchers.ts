import { Agent, type Dispatcher, Pool } from 'undici';
import { type Clock, LATE_TIMER_MS, runAfterIo, type Timer } from '../../clock/clock.js';
import type { BucketCounts, PoolSample } from '../types.js';

/**
 * The connection pools of the demo's services, shared by every stack (the stacks differ in what they
 * do with a call, never in the sockets under it).
 */

/** Counts every request handed to a dispatcher (each attempt and each hedge is one), per bucket. */
export class SendCounter {
  total = 0;
  readonly perBucket: Record<string, number> = {};
  readonly #clock: Clock;
  readonly #bucketMs: number;

  constructor(clock: Clock, bucketMs: number) {
    this.#clock = clock;
    this.#bucketMs = bucketMs;
  }

  count(): void {
    this.total += 1;
    const key = String(Math.floor(this.#clock.epochNow() / this.#bucketMs));
    this.perBucket[key] = (this.perBucket[key] ?? 0) + 1;
  }

  snapshot(): { total: number; perBucket: BucketCounts } {
    return { total: this.total, perBucket: { ...this.perBucket } };
  }
}

/**
 * A dispatcher for a service with several instances: each request (attempt, hedge) goes to the next
 * instance in turn, like a Kubernetes Service or a client-side round robin, and is counted. Origins
 * of the requests are rewritten, so callers may address any one of the instances.
 */
export function roundRobin(origins: readonly string[], counter: SendCounter): Dispatcher {
  if (origins.length === 0) throw new Error('roundRobin: no origin');
  let next = 0;
  const agent = new Agent({ connections: null, pipelining: 1 });
  return agent.compose((dispatch) => (opts, handler) => {
    counter.count();
    const origin = origins[next % origins.length]!;
    next += 1;
    return dispatch({ ...opts, origin }, handler);
  });
}

/**
 * A dispatcher for a client that picks the instance of each request itself (prazo's `origins`): it
 * sends each request to the origin it names, and counts it.
 */
export function counting(counter: SendCounter): Dispatcher {
  const agent = new Agent({ connections: null, pipelining: 1 });
  return agent.compose((dispatch) => (opts, handler) => {
    counter.count();
    return dispatch(opts, handler);
  });
}

/**
 * A bounded pool to one origin, sampled every `everyMs` for its occupancy (the gateway's pool). A
 * sample is read once the I/O already waiting has been read: Node runs a late timer before it reads
 * the sockets, so after the process stalled, answers that arrived meanwhile would still count as
 * connections held (measured at a load average of 14: 15 of 15 busy at the timer, 12 once read).
 */
export class SampledPool {
  readonly pool: Pool;
  readonly connections: number;
  readonly #samples: PoolSample[] = [];
  readonly #clock: Clock;
  readonly #everyMs: number;
  #timer: Timer | undefined;

  constructor(origin: string, connections: number, clock: Clock, everyMs = 50) {
    this.pool = new Pool(origin, { connections, pipelining: 1 });
    this.connections = connections;
    this.#clock = clock;
    this.#everyMs = everyMs;
    this.#tick();
  }

  #tick = (): void => {
    const at = this.#clock.now();
    runAfterIo(this.#clock, () => this.#sample(at, false));
    this.#timer = this.#clock.setTimer(this.#tick, this.#everyMs, { unref: true });
  };

  /** Reads the pool; when the process stalled since `at`, once more after the sockets are read. */
  #sample(at: number, deferred: boolean): void {
    if (!deferred && this.#clock.now() - at >= LATE_TIMER_MS) {
      runAfterIo(this.#clock, () => this.#sample(at, true));
      return;
    }
    const stats = this.pool.stats;
    this.#samples.push({
      epochMs: this.#clock.epochNow(),
      running: stats.running,
      queued: stats.pending,
    });
  }

  samples(): PoolSample[] {
    return [...this.#samples];
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    await this.pool.destroy();
  }
}
