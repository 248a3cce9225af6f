import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConfigChange, ConfigRejectedError, watchConfig } from '../../src/config/index.js';
import { ConfigMapVolume, waitFor } from '../../src/config/watch.test-helpers.js';
import type { DependencyEvent } from '../../src/dependency/types.js';
import { createHttpClient } from '../../src/http/index.js';

/**
 * SPEC X9 (#16 item 2), what must be shown: a live config under load. 1,000 calls are in flight over
 * real loopback HTTP through a prazo client bound to a watched ConfigMap volume (updated the way the
 * kubelet does: a symlink swap of `..data`) when the file changes twice — first to an invalid version,
 * then to a valid one that halves the p99 (so the attempt timeout falls below how long the calls in
 * flight still take). No call fails or is retried because of the reloads (each keeps the plan it
 * started with), the invalid version is refused with its line and changes nothing, and the valid one
 * is in force within 100 ms of the rename that published it. Real time, real files, real sockets.
 */

const FILE = 'prazo.config.yaml';
const CALLS = 1_000;

const version = (p99Ms: number, attempts = 2) => `# the shop's dependencies
version: 1
dependencies:
  - name: inventory
    p99Ms: ${p99Ms}
    attempts: ${attempts}
    defaultDeadlineMs: 20000
`;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('SPEC X9: the config is live under load', () => {
  it('1,000 calls in flight over two reloads (one invalid): none fails, the bad one refused at its line, the good one in force within 100 ms', async () => {
    // A loopback server that holds every request until released.
    const held: ServerResponse[] = [];
    const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      held.push(res);
    });
    server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }); // 1,000 connects at once
    await once(server, 'listening');
    cleanups.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const volume = new ConfigMapVolume();
    volume.update({ [FILE]: version(5000) }); // attempt timeout ceil(5000 × 1.4) = 7000 ms
    cleanups.push(() => volume.remove());
    const changes: { change: ConfigChange; at: number }[] = [];
    const errors: ConfigRejectedError[] = [];
    const watcher = watchConfig(volume.path(FILE), {
      pollMs: 0,
      onChange: (change) => changes.push({ change, at: performance.now() }),
      onError: (error) => errors.push(error),
    });
    cleanups.push(() => watcher.close());
    const client = createHttpClient({
      ...watcher.config.dependencies.get('inventory')!.options,
      origin,
    });
    cleanups.push(() => client.destroy());
    watcher.bind(client);
    expect(client.dependency.timeouts.responseMs).toBe(7000);
    const events: DependencyEvent[] = [];
    client.on((e) => events.push(e));

    // 1,000 calls in flight, every one on the server.
    const started = performance.now();
    const calls = Array.from({ length: CALLS }, (_, i) =>
      client.request(`/item/${i}`).then(
        async (res) => ({ ok: true as const, status: res.statusCode, body: await res.body.text() }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
    await waitFor(() => held.length === CALLS, 20_000, 'every call on the server');

    // 1. An invalid version: refused whole, at its line, the version in force kept.
    volume.update({ [FILE]: version(1000, 0) });
    await waitFor(() => errors.length === 1, 5_000, 'the invalid version refused');
    const refused = errors[0]!;
    expect(refused).toBeInstanceOf(ConfigRejectedError);
    expect(refused.reason).toBe('invalid');
    expect(refused.problems.map((p) => [p.line, p.key])).toEqual([[6, 'dependencies[0].attempts']]);
    expect(refused.message).toContain(`${watcher.file}:6:`);
    expect(watcher.version.generation).toBe(1);
    expect(client.dependency.p99Ms).toBe(5000);
    expect(client.dependency.timeouts.responseMs).toBe(7000);

    // 2. A valid version halving the p99: in force within 100 ms of the rename that published it.
    let renamed = 0;
    volume.update({ [FILE]: version(1000) }, () => {
      renamed = performance.now();
    });
    await waitFor(() => client.dependency.timeouts.responseMs === 1400, 5_000, 'the valid version in force');
    const inForceMs = performance.now() - renamed;
    expect(changes).toHaveLength(1);
    expect(changes[0]!.at - renamed).toBeLessThanOrEqual(100);
    expect(inForceMs).toBeLessThanOrEqual(100);
    expect(watcher.version.generation).toBe(2);
    expect(client.dependency.configVersion).toEqual(watcher.version);
    expect(errors).toHaveLength(1);

    // The calls in flight started under the 7000 ms plan: held past the new 1400 ms, they must
    // still succeed, each with its one attempt.
    const elapsed = performance.now() - started;
    await new Promise((r) => setTimeout(r, Math.max(0, 1_700 - elapsed)));
    expect(performance.now() - started).toBeGreaterThan(1_400);
    for (const [i, res] of held.entries()) res.end(`ok ${i}`);
    const results = await Promise.all(calls);
    const failed = results.filter((r) => !r.ok);
    expect(failed.map((r) => String((r as { error: unknown }).error)).slice(0, 3)).toEqual([]);
    expect(results.every((r) => r.ok && r.status === 200)).toBe(true);
    const attempts = events.filter((e) => e.type === 'attempt');
    expect(attempts.filter((e) => e.type === 'attempt' && e.kind !== 'original')).toEqual([]);
    expect(events.filter((e) => e.type === 'attempt-end' && e.outcome !== 'success')).toEqual([]);

    // A call starting now plans with the new version: held past 1400 ms, its attempt times out.
    held.length = 0;
    const late = client.request('/late', { idempotent: false }).then(
      () => 'answered',
      (error: { code?: string }) => error.code,
    );
    await waitFor(() => held.length === 1, 5_000, 'the new call on the server');
    const outcome = await late;
    expect(outcome).toMatch(/TIMEOUT/);
  }, 60_000);
});
