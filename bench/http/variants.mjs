import {
  ConsecutiveBreaker,
  ExponentialBackoff,
  handleAll,
  retry,
  TimeoutStrategy,
  timeout,
  wrap,
} from 'cockatiel';
import { Agent, request } from 'undici';
import { prazo } from '../lib/prazo.mjs';

/**
 * The HTTP variants, side by side: every one sends `GET /` to the same loopback keep-alive server and
 * reads the whole body (a body left unread keeps its connection out of the pool).
 *
 * - `undici`: bare `undici.request` on its own Agent: the ceiling nothing built on undici can pass.
 * - `fetch`: Node's global `fetch` (the undici bundled in Node 20).
 * - `cockatiel`: cockatiel 3's `wrap(retry, timeout)` around `undici.request`, the usual way to add
 *   retries and a timeout today (its timeout creates an AbortController per call).
 * - `prazo-request`: prazo's `request()` with a deadline per call, a retry budget, latency recording,
 *   and hedging armed but set never to fire (the hedge delay floor is far above the loopback latency).
 * - `prazo-fetch`: prazo's `fetch()`, same settings.
 */
export const HTTP_VARIANTS = ['undici', 'prazo-request', 'prazo-fetch', 'cockatiel', 'fetch'];

/** Per-call deadline and attempt settings shared by the resilient variants. */
export const CALL_DEADLINE_MS = 5_000;
const ATTEMPT_TIMEOUT_MS = 2_000;

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
    case 'fetch':
      return {
        call: async () => {
          const res = await fetch(url);
          await res.arrayBuffer();
        },
        close: async () => {},
      };
    case 'cockatiel': {
      const dispatcher = new Agent();
      const policy = wrap(
        retry(handleAll, { maxAttempts: 2, backoff: new ExponentialBackoff() }),
        timeout(ATTEMPT_TIMEOUT_MS, TimeoutStrategy.Aggressive),
      );
      void ConsecutiveBreaker;
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
    default:
      throw new Error(`unknown HTTP variant: ${name}`);
  }
}

async function createPrazoVariant(name, origin) {
  const createHttpClient = await prazo('http', 'createHttpClient');
  const createRetryBudget = await prazo('budget', 'createRetryBudget');
  const Deadline = await prazo('deadline', 'Deadline');
  const client = createHttpClient({
    name: 'bench',
    origin,
    p99Ms: 50,
    attempts: 2,
    retryBudget: createRetryBudget(),
    hedge: { minDelayMs: 1_000 },
  });
  if (name === 'prazo-request') {
    return {
      call: async () => {
        const res = await client.request({
          path: '/',
          method: 'GET',
          deadline: Deadline.after(CALL_DEADLINE_MS),
        });
        await res.body.dump();
      },
      close: () => client.close(),
    };
  }
  return {
    call: async () => {
      const res = await client.fetch(`${origin}/`, { deadline: Deadline.after(CALL_DEADLINE_MS) });
      await res.arrayBuffer();
    },
    close: () => client.close(),
  };
}
