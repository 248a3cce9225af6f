import { ExponentialBackoff, handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { Agent, Pool, request, setGlobalDispatcher } from 'undici';
import { prazo, Unavailable } from '../lib/prazo.mjs';

/**
 * The HTTP variants, side by side: every one sends `GET /` to the same loopback keep-alive server and
 * reads the whole body (a body left unread keeps its connection out of the pool).
 *
 * - `undici`: bare `undici.request` on its own Agent: the ceiling nothing built on undici can pass.
 * - `undici-pool`: bare `pool.request({ path })` on one undici `Pool` for the origin — the dispatcher
 *   prazo's client uses — so a difference from `undici` shows what the Agent and URL parsing cost, and
 *   prazo is also compared with the like-for-like floor.
 * - `undici-pool-header`: the same `pool.request` carrying the header prazo writes on every call
 *   (`x-deadline-epoch-ms`, the epoch ms of a 5 s deadline, read from the wall clock per call): read
 *   against `prazo-request`, what prazo costs beyond carrying the deadline itself (undici validates and
 *   writes the header, the server parses it), which no implementation of SPEC D1 can skip.
 * - `undici-header`: bare `undici.request` on its own Agent carrying the same deadline header: read
 *   against `undici-interceptor` (which writes it), what the interceptor costs beyond carrying it.
 * - `undici-signal-header`: the same with a fresh `AbortController`'s signal per call as well, the two
 *   things `prazo-execute`'s operation passes on (the attempt's `signal` and `headers`): read against
 *   it, what the executor costs beyond what its operation chose to do with them.
 * - `fetch`: Node's global `fetch` (the undici bundled in Node 20).
 * - `cockatiel`: cockatiel 3's `wrap(retry, timeout)` around `undici.request`, the usual way to add
 *   retries and a timeout today (its timeout creates an AbortController per call).
 * - `prazo-request`: prazo's `request()` with a deadline per call, a retry budget, latency recording,
 *   and hedging armed but set never to fire (the hedge delay floor is far above the loopback latency).
 * - `prazo-fetch`: prazo's `fetch()`, same settings.
 * - `prazo-execute`: prazo's executor (`createDependency(...).execute`, same settings) around bare
 *   `undici.request`, passing the attempt's signal and deadline headers: what the policy layer costs on
 *   its own, to tell it apart from the client's.
 * - `undici-interceptor`: bare `undici.request` on `new Agent().compose(interceptor(...))` from
 *   prazo/http, the origin mapped to a dependency with the same settings and the deadline passed per
 *   call (`{ prazo: { deadline } }`): read against `undici`, the same call on the same kind of Agent.
 * - `fetch-agent`: Node's global `fetch` after `setGlobalDispatcher(new Agent())` (undici's package):
 *   how a service that configures its own Agent calls with fetch, the floor for the next one.
 * - `fetch-interceptor`: the same with `setGlobalDispatcher(new Agent().compose(interceptor(...)))`;
 *   fetch has no per-call dispatch options, so the deadline is the dependency's default (5 s).
 *
 * A variant may expose `stats()` (hedges sent, retries...), reported next to its numbers: "armed, not
 * firing" is checked, not assumed.
 */
export const HTTP_VARIANTS = [
  'undici',
  'undici-pool',
  'undici-pool-header',
  'undici-header',
  'undici-signal-header',
  'prazo-request',
  'prazo-fetch',
  'prazo-execute',
  'undici-interceptor',
  'cockatiel',
  'fetch',
  'fetch-agent',
  'fetch-interceptor',
];

/**
 * The pairs read side by side (ratios taken within each round): each variant against the one that
 * differs from it only by what prazo adds.
 */
export const HTTP_PAIRS = [
  { variant: 'prazo-request', against: 'undici-pool', why: 'the dispatcher prazo request() drives' },
  {
    variant: 'prazo-request',
    against: 'undici-pool-header',
    why: 'the same request with the same deadline header, sent by bare undici',
  },
  { variant: 'undici-interceptor', against: 'undici', why: 'undici.request on the same kind of Agent' },
  {
    variant: 'undici-interceptor',
    against: 'undici-header',
    why: 'the same call carrying the same deadline header, sent by bare undici',
  },
  { variant: 'fetch-interceptor', against: 'fetch-agent', why: 'global fetch on a bare Agent' },
  { variant: 'prazo-execute', against: 'undici', why: 'the executor around undici.request' },
  {
    variant: 'prazo-execute',
    against: 'undici-signal-header',
    why: 'the same call with what the operation passes on (a signal per call, the deadline header), without the executor',
  },
];

/** Per-call deadline and attempt settings shared by the resilient variants. */
export const CALL_DEADLINE_MS = 5_000;
const ATTEMPT_TIMEOUT_MS = 2_000;
/**
 * The configured p99 of the loopback dependency, in ms, and the hedge floor: the hedge is armed on
 * every call (one timer) at max(live p95, 1 s), below the attempt timeout ceil(1000 × 1.4) = 1.4 s, so
 * it fires only for a call stalled for a second. Generous on purpose: the machine is shared, and a
 * neighbour's burst must not turn this into a benchmark of timeouts and retries.
 */
const P99_MS = 1_000;
const HEDGE = { minDelayMs: 1_000 };

export async function createVariant(name, { origin }) {
  const url = `${origin}/`;
  switch (name) {
    case 'undici': {
      const dispatcher = new Agent();
      return {
        call: async () => {
          const res = await request(url, { dispatcher });
          await res.body.dump();
        },
        close: () => dispatcher.close(),
      };
    }
    case 'undici-pool': {
      const pool = new Pool(origin);
      return {
        call: async () => {
          const res = await pool.request({ method: 'GET', path: '/' });
          await res.body.dump();
        },
        close: () => pool.close(),
      };
    }
    case 'undici-pool-header': {
      const pool = new Pool(origin);
      return {
        call: async () => {
          const headers = ['x-deadline-epoch-ms', String(Math.floor(Date.now() + CALL_DEADLINE_MS))];
          const res = await pool.request({ method: 'GET', path: '/', headers });
          await res.body.dump();
        },
        close: () => pool.close(),
      };
    }
    case 'undici-header':
    case 'undici-signal-header': {
      const dispatcher = new Agent();
      const signals = name === 'undici-signal-header';
      return {
        call: async () => {
          const headers = { 'x-deadline-epoch-ms': String(Math.floor(Date.now() + CALL_DEADLINE_MS)) };
          const signal = signals ? new AbortController().signal : undefined;
          const res = await request(url, { dispatcher, headers, signal });
          await res.body.dump();
        },
        close: () => dispatcher.close(),
      };
    }
    case 'fetch':
      return {
        call: async () => {
          const res = await fetch(url);
          await res.arrayBuffer();
        },
        close: async () => {},
      };
    case 'fetch-agent':
    case 'fetch-interceptor': {
      const agent = new Agent();
      const prazoOn = name === 'fetch-interceptor' ? await prazoInterceptor(origin) : undefined;
      setGlobalDispatcher(prazoOn ? agent.compose(prazoOn.interceptor) : agent);
      return {
        call: async () => {
          const res = await fetch(url);
          await res.arrayBuffer();
        },
        close: () => agent.close(),
        stats: prazoOn?.stats,
      };
    }
    case 'undici-interceptor':
      return createInterceptorVariant(origin);
    case 'cockatiel': {
      const dispatcher = new Agent();
      const policy = wrap(
        retry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff() }),
        timeout(ATTEMPT_TIMEOUT_MS, TimeoutStrategy.Aggressive),
      );
      return {
        call: () =>
          policy.execute(async ({ signal }) => {
            const res = await request(url, { dispatcher, signal });
            await res.body.dump();
          }),
        close: () => dispatcher.close(),
      };
    }
    case 'prazo-request':
    case 'prazo-fetch':
      return createPrazoVariant(name, origin);
    case 'prazo-execute':
      return createExecuteVariant(url);
    default:
      throw new Error(`unknown HTTP variant: ${name}`);
  }
}

async function createPrazoVariant(name, origin) {
  const createHttpClient = await prazo('http', 'createHttpClient');
  const createRetryBudget = await prazo('budget', 'createRetryBudget');
  const createLatencyRecorder = await prazo('latency', 'createLatencyRecorder');
  const Deadline = await prazo('deadline', 'Deadline');
  const recorder = createLatencyRecorder();
  const client = createHttpClient({
    name: 'bench',
    origin,
    p99Ms: P99_MS,
    attempts: 2,
    defaultDeadlineMs: CALL_DEADLINE_MS,
    retryBudget: createRetryBudget(),
    recorder,
    hedge: HEDGE,
  });
  const executor = client.dependency ?? client;
  const counts = typeof executor.on === 'function' ? countEvents(executor) : {};
  const stats = () => ({ ...counts, recording: recorder.currentWindow().count > 0 });
  if (name === 'prazo-request') {
    return {
      call: async () => {
        const res = await client.request({ path: '/', deadline: Deadline.after(CALL_DEADLINE_MS) });
        await res.body.dump();
      },
      close: () => client.close(),
      stats,
    };
  }
  return {
    call: async () => {
      const res = await client.fetch(url(origin), { deadline: Deadline.after(CALL_DEADLINE_MS) });
      await res.arrayBuffer();
    },
    close: () => client.close(),
    stats,
  };
}

const url = (origin) => `${origin}/`;

/**
 * prazo/http's `interceptor(options)` with the origin mapped to a dependency of the same settings as
 * the client variants, and its stats (retries and hedges from its events, recording from the
 * dependency's recorder). A prazo built without it makes the variants "not available", never a crash.
 */
async function prazoInterceptor(origin) {
  let create;
  try {
    create = await prazo('http', 'interceptor');
  } catch (error) {
    if (!(error instanceof Unavailable)) throw error;
    throw new Unavailable('prazo/http exports no interceptor() in this build');
  }
  const interceptor = create({
    dependencies: {
      [origin]: {
        name: 'bench',
        p99Ms: P99_MS,
        attempts: 2,
        defaultDeadlineMs: CALL_DEADLINE_MS,
        hedge: HEDGE,
      },
    },
  });
  const counts = countEvents(interceptor);
  const recorder = () => interceptor.dependency(origin)?.recorder;
  return {
    interceptor,
    stats: () => ({ ...counts, recording: (recorder()?.currentWindow().count ?? 0) > 0 }),
  };
}

async function createInterceptorVariant(origin) {
  const Deadline = await prazo('deadline', 'Deadline');
  const agent = new Agent();
  const { interceptor, stats } = await prazoInterceptor(origin);
  const dispatcher = agent.compose(interceptor);
  const target = url(origin);
  return {
    call: async () => {
      const res = await request(target, {
        dispatcher,
        prazo: { deadline: Deadline.after(CALL_DEADLINE_MS) },
      });
      await res.body.dump();
    },
    close: () => agent.close(),
    stats,
  };
}

async function createExecuteVariant(url) {
  const createDependency = await prazo('dependency', 'createDependency');
  const dependency = createDependency({
    name: 'bench',
    p99Ms: P99_MS,
    attempts: 2,
    defaultDeadlineMs: CALL_DEADLINE_MS,
    hedge: HEDGE,
  });
  const counts = countEvents(dependency);
  const dispatcher = new Agent();
  const operation = async ({ signal, headers }) => {
    const res = await request(url, { dispatcher, signal, headers });
    await res.body.dump();
  };
  const options = { idempotent: true };
  return {
    call: () => dependency.execute(operation, options),
    close: () => dispatcher.close(),
    stats: () => counts,
  };
}

/** Counts the executor's retries and hedges, to show that hedging was armed but did not fire. */
function countEvents(dependency) {
  const counts = { retries: 0, hedges: 0 };
  dependency.on((event) => {
    if (event.type !== 'attempt') return;
    if (event.kind === 'retry') counts.retries += 1;
    else if (event.kind === 'hedge') counts.hedges += 1;
  });
  return counts;
}
