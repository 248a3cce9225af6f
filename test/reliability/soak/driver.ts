import type { HttpClient } from '../../../src/http/index.js';
import { codeOf } from '../matrix/run-cell.js';
import { pickFault, prng } from './mix.js';

/**
 * Drives `calls` logical calls through a prazo client with `concurrency` callers, a seeded mix of
 * kinds (60 % GET, 20 % POST without key, 20 % POST with key) and faults (see mix.ts). Every call
 * reads its body to the end (a stalled or reset body fails there), and every outcome is counted.
 */

export interface DriveOptions {
  readonly client: HttpClient;
  readonly calls: number;
  readonly concurrency: number;
  readonly seed: number;
  /** Prefix of this run's call ids, so runs against one server never share a path. */
  readonly prefix: string;
  /** A long-lived signal passed to every call (the shutdown-signal pattern). */
  readonly signal?: AbortSignal;
  readonly deadlineMs: number;
}

export type Outcomes = Record<string, number>;

export async function drive(o: DriveOptions): Promise<Outcomes> {
  const rnd = prng(o.seed);
  const outcomes: Outcomes = {};
  let next = 0;
  const one = async (id: number): Promise<void> => {
    const u = rnd();
    const fault = pickFault(rnd());
    const kind = u < 0.6 ? 'GET' : u < 0.8 ? 'POST' : 'POST+key';
    let outcome: string;
    try {
      const res = await o.client.request(`/soak/${o.prefix}${id}/${fault}`, {
        method: kind === 'GET' ? 'GET' : 'POST',
        ...(kind === 'GET' ? {} : { body: '{"soak":true}' }),
        ...(kind === 'POST+key' ? { idempotencyKey: `${o.prefix}${id}` } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        deadline: o.deadlineMs,
      });
      await res.body.text();
      outcome = `HTTP ${res.statusCode}`;
    } catch (error) {
      outcome = codeOf(error);
    }
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  };
  const worker = async (): Promise<void> => {
    while (next < o.calls) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.calls) }, worker));
  return outcomes;
}

/** Histogram of `process.getActiveResourcesInfo()` by type (sockets, timers, servers, ...). */
export function activeResources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}
