import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { checkConfigFile, checkConfigText, type PrazoConfig } from '../config/index.js';
import { echoClient, type SayReply, say, startEcho } from '../grpc/grpc.test-helpers.js';
import { exportMesh } from './export.js';

/**
 * The gRPC service config `prazo export --to grpc` writes, read by @grpc/grpc-js itself (SPEC X10):
 * each file becomes a channel's `grpc.service_config`, and a real call on loopback shows the policy in
 * force — the retry of an UNAVAILABLE first attempt, a hedge sent after `hedgingDelay` that answers
 * before a stalled first copy, the deadline of the method config. grpc-js validates the JSON when the
 * channel is created and throws on a bad one, so a client that works is a config it accepted.
 */

const EXAMPLE = new URL('../../examples/prazo.config.yaml', import.meta.url).pathname;
const stops: Array<() => Promise<void>> = [];
const clients: Array<{ close(): void }> = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const stop of stops.splice(0)) await stop();
});

const fromText = (text: string): PrazoConfig => {
  const { config, problems } = checkConfigText(text, { readText: () => '' });
  expect(problems.filter((p) => p.severity === 'error')).toEqual([]);
  return config!;
};

/** The exported service config of `dependency`, as the JSON text a user passes to grpc-js. */
function serviceConfigOf(config: PrazoConfig, dependency: string): string {
  const result = exportMesh(config, { target: 'grpc', dependencies: [dependency] });
  expect(result.problems).toEqual([]);
  expect(result.files).toHaveLength(1);
  return result.files[0]!.text;
}

/** A server whose first `fail` calls answer UNAVAILABLE, and whose calls with `delayMs` stall that long. */
async function server(behaviour: { failFirst?: number; stallFirstMs?: number }) {
  const calls: number[] = [];
  const echo = await startEcho({
    say(
      call: { request: { text: string }; on(e: string, f: () => void): void },
      callback: (error: { code: number; details: string } | null, reply?: SayReply) => void,
    ) {
      calls.push(calls.length + 1);
      const n = calls.length;
      if (n <= (behaviour.failFirst ?? 0)) {
        callback({ code: status.UNAVAILABLE, details: `attempt ${n} unavailable` });
        return;
      }
      const reply = { text: `attempt ${n}`, remainingMs: -1, deadlineEpochMs: 0 };
      if (n === 1 && behaviour.stallFirstMs !== undefined) {
        const timer = setTimeoutReal(() => callback(null, reply), behaviour.stallFirstMs);
        call.on('cancelled', () => clearTimeoutReal(timer));
        return;
      }
      callback(null, reply);
    },
  });
  stops.push(echo.stop);
  return { address: echo.address, calls };
}

// The server side stands in for a real dependency, on real time (nothing of prazo's runs here).
const setTimeoutReal = globalThis.setTimeout;
const clearTimeoutReal = globalThis.clearTimeout;

const client = (address: string, serviceConfig: string) => {
  const c = echoClient(address, { 'grpc.service_config': serviceConfig });
  clients.push(c);
  return c;
};

describe('gRPC service config, applied by @grpc/grpc-js (SPEC X10)', () => {
  it('every file exported from the example is accepted by grpc-js and serves a real call', async () => {
    const config = checkConfigFile(EXAMPLE).config!;
    const { address, calls } = await server({});
    const result = exportMesh(config, { target: 'grpc' });
    expect(result.files.map((f) => f.name)).toEqual([
      'grpc-service-config.orders.json',
      'grpc-service-config.inventory.json',
      'grpc-service-config.supplier.json',
    ]);
    for (const file of result.files) {
      const reply = await say(client(address, file.text), { text: 'hi' });
      expect(reply.text).toMatch(/^attempt \d$/);
    }
    expect(calls).toHaveLength(result.files.length); // one call each: nothing failed, nothing hedged
    // A config grpc-js refuses makes the client throw: the check above is not vacuous.
    const broken = JSON.parse(result.files[1]!.text);
    broken.methodConfig[0].hedgingPolicy.maxAttempts = 1;
    expect(() => echoClient(address, { 'grpc.service_config': JSON.stringify(broken) })).toThrow(
      /maxAttempts/,
    );
  });

  it('retryPolicy: an UNAVAILABLE first attempt is retried, within the attempts that fit the deadline', async () => {
    const config = fromText(
      'dependencies:\n  - { name: pricing, p99Ms: 50, attempts: 3, defaultDeadlineMs: 2000, mesh: { protocol: grpc, grpcService: prazo.test.Echo } }\n',
    );
    const text = serviceConfigOf(config, 'pricing');
    expect(JSON.parse(text).methodConfig[0]).toMatchObject({
      name: [{ service: 'prazo.test.Echo' }],
      timeout: '2s',
      retryPolicy: {
        maxAttempts: 3,
        initialBackoff: '0.025000000s',
        maxBackoff: '1s',
        retryableStatusCodes: ['UNAVAILABLE'],
      },
    });
    const twice = await server({ failFirst: 2 });
    expect((await say(client(twice.address, text), { text: 'x' })).text).toBe('attempt 3');
    expect(twice.calls).toHaveLength(3);
    // The third failure exhausts the 3 attempts: the caller sees UNAVAILABLE, and no fourth call is made.
    const always = await server({ failFirst: 10 });
    await expect(say(client(always.address, text), { text: 'x' })).rejects.toMatchObject({
      code: status.UNAVAILABLE,
    });
    expect(always.calls).toHaveLength(3);
  });

  it('without the service config the same client does not retry (the policy comes from the file)', async () => {
    const once = await server({ failFirst: 1 });
    const plain = echoClient(once.address);
    clients.push(plain);
    await expect(say(plain, { text: 'x' })).rejects.toMatchObject({ code: status.UNAVAILABLE });
    expect(once.calls).toHaveLength(1);
  });

  it('hedgingPolicy: a second copy leaves after hedgingDelay and answers while the first is stalled', async () => {
    const config = fromText(
      'dependencies:\n  - { name: quotes, p99Ms: 200, attempts: 2, defaultDeadlineMs: 5000, hedge: true, mesh: { protocol: grpc, hedgeDelayMs: 50 } }\n',
    );
    const text = serviceConfigOf(config, 'quotes');
    expect(JSON.parse(text).methodConfig[0]).toMatchObject({
      name: [{}],
      timeout: '5s',
      hedgingPolicy: { maxAttempts: 2, hedgingDelay: '0.050000000s', nonFatalStatusCodes: ['UNAVAILABLE'] },
    });
    expect(JSON.parse(text).retryThrottling).toEqual({ maxTokens: 60, tokenRatio: 0.1 });
    const stalled = await server({ stallFirstMs: 4000 });
    const started = performance.now();
    const reply = await say(client(stalled.address, text), { text: 'x' });
    const tookMs = performance.now() - started;
    expect(reply.text).toBe('attempt 2'); // the hedge won
    expect(stalled.calls).toHaveLength(2);
    expect(tookMs).toBeGreaterThanOrEqual(45); // not before hedgingDelay (timer granularity aside)
    expect(tookMs).toBeLessThan(3000); // long before the stalled copy (4 s): generous for a loaded machine
  });

  it('the method config’s timeout is the deadline: a call that outlives it fails DEADLINE_EXCEEDED', async () => {
    const config = fromText(
      'dependencies:\n  - { name: slow, p99Ms: 100, attempts: 1, defaultDeadlineMs: 300, mesh: { protocol: grpc } }\n',
    );
    const text = serviceConfigOf(config, 'slow');
    // One attempt: the whole call is the attempt timeout, ceil(100 × 1.4) = 140 ms.
    // Nine fractional digits: grpc-js reads `0.14s` as 14 ns (the digits taken as nanoseconds).
    expect(JSON.parse(text).methodConfig[0].timeout).toBe('0.140000000s');
    const stalled = await server({ stallFirstMs: 3000 });
    const started = performance.now();
    await expect(say(client(stalled.address, text), { text: 'x' })).rejects.toMatchObject({
      code: status.DEADLINE_EXCEEDED,
    });
    const tookMs = performance.now() - started;
    expect(tookMs).toBeGreaterThanOrEqual(130); // the 140 ms deadline, not a truncated one
    expect(tookMs).toBeLessThan(2500);
  });
});
