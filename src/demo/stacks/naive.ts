import { request } from 'undici';
import type { HopClient, HopClientOptions, HopResponse, Stack } from './types.js';

/**
 * The naive stack: what a service gets from library defaults and the usual snippet. Every hop waits
 * up to 3 s per attempt and tries 3 times, at once, on any error or 5xx; no deadline travels, no
 * budget limits retries, and a handler keeps working after its caller hung up. Each choice looks
 * prudent one request at a time; the demo shows what they add up to across four hops.
 */
export class NaiveError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NaiveError';
    this.status = status;
  }
}

function naiveClient(options: HopClientOptions): HopClient {
  const { hop, clock, dispatcher, origin, name } = options;
  if (hop.stack !== 'naive') throw new Error('naive client needs naive hop settings');
  const { timeoutMs, attempts } = hop;

  const once = async (path: string, headers: Record<string, string>): Promise<HopResponse> => {
    const controller = new AbortController();
    const timer = clock.setTimer(
      () => controller.abort(new NaiveError(`${name}: timeout after ${timeoutMs} ms`)),
      timeoutMs,
    );
    try {
      const res = await request(`${origin}${path}`, { dispatcher, headers, signal: controller.signal });
      const body = await res.body.text();
      return { status: res.statusCode, body };
    } finally {
      clock.clearTimer(timer);
    }
  };

  return {
    async get(path, headers) {
      let last: unknown;
      for (let attempt = 1; attempt <= attempts; attempt += 1) {
        try {
          const res = await once(path, headers);
          if (res.status < 500) return res;
          last = new NaiveError(`${name}: status ${res.status}`, res.status);
        } catch (error) {
          last = error;
        }
      }
      throw last;
    },
    close: async () => {},
  };
}

export const naiveStack: Stack = {
  client: naiveClient,
  serve: (handler) => (req, res) => {
    void handler(req, res);
  },
  failure: () => ({ status: 502, headers: {} }),
};
