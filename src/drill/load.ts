import { type Clock, sleep } from '../clock/index.js';
import { quantile } from '../demo/stats.js';

/**
 * The drill's load (SPEC V2), with autocannon: a bounded, rate-limited load on the routes that use
 * the replaced dependency (that is what fills the pool), and at the same time a probe on the routes
 * that do not (that is what the verdict is about).
 *
 * autocannon limits a rate per connection and per second, all connections on the same second
 * boundary: 20 req/s arrive as one burst of 20 every second, which no pool sized by Little's law
 * (an average) absorbs. So each load is cut into slices started evenly across the first second:
 * 20 req/s become 10 slices of 2 req/s, 100 ms apart, close to the even arrivals of real traffic.
 * autocannon is loaded on demand, so the rest of the CLI does not need it.
 */

export interface RouteLoadResult {
  readonly paths: readonly string[];
  /** Requests that ended: answered (any status), failed or timed out. */
  readonly ended: number;
  readonly ok: number;
  readonly non2xx: number;
  /** Connection errors and timeouts (autocannon counts timeouts among errors). */
  readonly errors: number;
  readonly timeouts: number;
  /** `ok / ended`, %; undefined when nothing ended. */
  readonly successPct: number | undefined;
  /** Latency of answered requests, in ms (timeouts are not in it: see `timeouts`). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface DrillLoadOptions {
  readonly origin: string;
  readonly dependent: readonly string[];
  readonly independent: readonly string[];
  readonly durationS: number;
  readonly rate: number;
  readonly independentRate: number;
  /** Connections of the dependent load (enough to keep the rate when each call is held long). */
  readonly connections: number;
  readonly probeTimeoutMs: number;
  readonly clock: Clock;
  readonly signal?: AbortSignal;
}

interface AutocannonResult {
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly '2xx': number;
}
interface AutocannonRun extends PromiseLike<AutocannonResult> {
  stop(): void;
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void;
}
type Autocannon = (options: Record<string, unknown>) => AutocannonRun;

/** autocannon ships no types; the few fields used are declared above. */
const AUTOCANNON = 'autocannon';
const MAX_SLICES = 10;

async function load(): Promise<Autocannon> {
  const mod = (await import(AUTOCANNON)) as { default?: Autocannon };
  return (mod.default ?? (mod as unknown as Autocannon)) as Autocannon;
}

interface Slices {
  readonly paths: readonly string[];
  readonly rate: number;
  readonly connections: number;
}

async function runSliced(autocannon: Autocannon, o: DrillLoadOptions, s: Slices, runs: Set<AutocannonRun>) {
  const slices = Math.max(1, Math.min(MAX_SLICES, Math.floor(s.rate)));
  const latencies: number[] = [];
  const started: Promise<AutocannonResult>[] = [];
  for (let i = 0; i < slices; i += 1) {
    if (o.signal?.aborted) break;
    const rate = Math.max(1, Math.round((s.rate * (i + 1)) / slices) - Math.round((s.rate * i) / slices));
    const run = autocannon({
      url: o.origin,
      duration: o.durationS,
      timeout: Math.max(1, o.probeTimeoutMs / 1000),
      connections: Math.max(1, Math.ceil(s.connections / slices)),
      overallRate: rate,
      requests: s.paths.map((path) => ({ method: 'GET', path })),
    });
    run.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
    runs.add(run);
    started.push(Promise.resolve(run));
    if (i < slices - 1) await sleep(o.clock, 1000 / slices).catch(() => {});
  }
  const results = await Promise.all(started);
  const sum = (key: keyof AutocannonResult): number => results.reduce((t, r) => t + r[key], 0);
  const ok = sum('2xx');
  const non2xx = sum('non2xx');
  const errors = sum('errors');
  const ended = ok + non2xx + errors;
  return {
    paths: s.paths,
    ended,
    ok,
    non2xx,
    errors,
    timeouts: sum('timeouts'),
    successPct: ended > 0 ? Math.round((1e4 * ok) / ended) / 100 : undefined,
    p50Ms: Math.round(quantile(latencies, 0.5) ?? 0),
    p99Ms: Math.round(quantile(latencies, 0.99) ?? 0),
    maxMs: Math.round(latencies.length > 0 ? Math.max(...latencies) : 0),
  };
}

export async function runDrillLoad(
  o: DrillLoadOptions,
): Promise<{ dependent: RouteLoadResult | undefined; independent: RouteLoadResult }> {
  const autocannon = await load();
  const runs = new Set<AutocannonRun>();
  const stop = (): void => {
    for (const run of runs) run.stop();
  };
  o.signal?.addEventListener('abort', stop, { once: true });
  try {
    const probeConnections = Math.max(2, Math.ceil((o.independentRate * o.probeTimeoutMs) / 1000));
    const [dependent, independent] = await Promise.all([
      o.dependent.length > 0
        ? runSliced(autocannon, o, { paths: o.dependent, rate: o.rate, connections: o.connections }, runs)
        : Promise.resolve(undefined),
      runSliced(
        autocannon,
        o,
        { paths: o.independent, rate: o.independentRate, connections: probeConnections },
        runs,
      ),
    ]);
    return { dependent, independent };
  } finally {
    o.signal?.removeEventListener('abort', stop);
  }
}
