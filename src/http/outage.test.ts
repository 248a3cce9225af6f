import { describe, expect, it } from 'vitest';
import { createHttpClient } from './client.js';
import { faults, startServer } from './servers.test-helpers.js';

/**
 * A dependency in a full outage, behind prazo/http on real loopback sockets (SPEC R1, H3, V4): the
 * retry budget keeps the load that reaches it within 10% of the original requests, and when the
 * client is closed nothing of it is left running: no socket, no timer.
 */

const KINDS = ['TCPSocketWrap', 'TCPServerWrap', 'Timeout'] as const;

function handles(): Record<(typeof KINDS)[number], number> {
  const all = process.getActiveResourcesInfo();
  return Object.fromEntries(KINDS.map((k) => [k, all.filter((r) => r === k).length])) as never;
}

async function settledHandles(baseline: ReturnType<typeof handles>, ms: number) {
  const until = performance.now() + ms;
  let now = handles();
  while (KINDS.some((k) => now[k] > baseline[k]) && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    now = handles();
  }
  return now;
}

describe('an outage', () => {
  it('requests reaching the dependency stay ≤ 1.1× the originals, and nothing is left open', async () => {
    const baseline = handles();
    const server = await startServer(faults.status(503));
    const client = createHttpClient({
      name: 'supplier',
      origin: server.origin,
      // Generous: two shared cores, 50 connections opened at once; under a CI machine's load one 503
      // took 776 ms against the 700 ms a p99 of 500 gave, and the whole test threw.
      p99Ms: 1_000,
      attempts: 3, // a naive client with 3 attempts would send 3× the load
      hedge: true,
      connections: 50,
      throttle: false, // the retry budget's bound alone; the throttle's is in src/throttle (issue 23)
    });
    const originals = 1_000;
    let next = 0;
    const statuses = new Map<number, number>();
    const failures = new Map<string, number>();
    const worker = async (): Promise<void> => {
      while (next < originals) {
        next += 1;
        try {
          const response = await client.request('/stock', { deadline: 5_000 });
          await response.body.dump();
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        } catch (error) {
          // A machine stalled past the attempt timeout: a typed failure, counted, never a hang.
          const code = String((error as { code?: unknown }).code);
          failures.set(code, (failures.get(code) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));

    // Every call ended; nearly every caller got the server's answer (a stalled machine may time a few
    // out, as typed errors, never more than 2%).
    const answered = statuses.get(503) ?? 0;
    expect(answered + [...failures.values()].reduce((a, b) => a + b, 0)).toBe(originals);
    expect([...statuses.keys()].filter((s) => s !== 503)).toEqual([]);
    expect([...failures.keys()].filter((c) => !c.endsWith('_TIMEOUT'))).toEqual([]);
    expect(answered).toBeGreaterThanOrEqual(0.98 * originals);
    const received = server.seen.length;
    expect(received).toBeGreaterThan(originals); // retries did happen while the budget allowed
    expect(received).toBeLessThanOrEqual(1.1 * originals);
    const { originals: counted, extras, ratio } = client.dependency.budget.state();
    expect(counted).toBe(originals);
    expect(extras).toBe(received - originals);
    expect(ratio).toBeLessThanOrEqual(0.1);

    expect(handles().TCPSocketWrap).toBeGreaterThan(baseline.TCPSocketWrap); // the check sees sockets
    await client.close();
    await server.close();
    const after = await settledHandles(baseline, 3_000);
    for (const kind of KINDS)
      expect({ kind, open: after[kind] <= baseline[kind] }).toEqual({ kind, open: true });
  });
});
