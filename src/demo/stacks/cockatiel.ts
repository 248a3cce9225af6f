import { ExponentialBackoff, handleAll, retry, TimeoutStrategy, timeout, wrap } from 'cockatiel';
import { request } from 'undici';
import { NaiveError } from './naive.js';
import type { HopClient, HopClientOptions, Stack } from './types.js';

/**
 * The cockatiel stack: what a TypeScript team picks today, `wrap(retry(handleAll, { maxAttempts: 2,
 * backoff: new ExponentialBackoff() }), timeout(3000, TimeoutStrategy.Aggressive))`. Better than naive
 * (backoff with jitter, a timeout that cancels the attempt's socket), but the timeout is a constant,
 * nothing travels between hops and retries are a right of each request, not a shared budget.
 */
function cockatielClient(options: HopClientOptions): HopClient {
  const { hop, dispatcher, origin, name } = options;
  if (hop.stack !== 'cockatiel') throw new Error('cockatiel client needs cockatiel hop settings');
  const policy = wrap(
    retry(handleAll, {
      maxAttempts: hop.attempts - 1,
      backoff: new ExponentialBackoff({ initialDelay: hop.initialDelayMs }),
    }),
    timeout(hop.timeoutMs, TimeoutStrategy.Aggressive),
  );
  return {
    get: (path, headers) =>
      policy.execute(async ({ signal }) => {
        const res = await request(`${origin}${path}`, { dispatcher, headers, signal });
        const body = await res.body.text();
        if (res.statusCode >= 500) throw new NaiveError(`${name}: status ${res.statusCode}`, res.statusCode);
        return { status: res.statusCode, body };
      }),
    close: async () => {},
  };
}

export const cockatielStack: Stack = {
  client: cockatielClient,
  serve: (handler) => (req, res) => {
    void handler(req, res);
  },
  failure: () => ({ status: 502, headers: {} }),
};
