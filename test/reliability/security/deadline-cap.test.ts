import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from '../../../src/http/index.js';
import { withIncomingDeadline } from '../../../src/server/index.js';
import { type FaultServer, neverAnswer, startHttpFault } from '../faults/http-faults.js';

/**
 * A hostile caller against a prazo service, over two real hops (caller → service → dependency, all
 * on 127.0.0.1). Whatever deadline the caller claims (an absolute one an hour away, a gRPC timeout of
 * 11,000 years, an Envoy timeout of months, all at once, oversized or repeated), the service holds
 * the request, its downstream call and the downstream connection for at most its own `maxMs`
 * (SPEC D2, D5, D7), and tells the dependency no later a deadline than that.
 */

const MAX_MS = 300;
// Two shared, noisy cores: the answer and the socket's release come within maxMs + 300 ms. The slack
// does not hide the attempt timeout (350 ms) ending the call instead of the capped deadline: the body
// must say DEADLINE_EXCEEDED, and the time held must not be below maxMs. (A first case paid the
// connection's set-up and JIT on top: 451 ms with a 100 ms slack on a loaded CI machine.)
const SLACK_MS = 300;

let dependency: FaultServer;
let client: HttpClient;
let service: Server;
let origin: string;

beforeAll(async () => {
  dependency = await startHttpFault('hung dependency', neverAnswer);
  // The attempt timeout (ceil(250 × 1.4) = 350 ms) is longer than the service's maximum: only the
  // capped deadline can end the downstream call in time.
  client = createHttpClient({ name: 'dependency', origin: dependency.origin, p99Ms: 250, attempts: 1 });
  service = createServer(
    withIncomingDeadline(
      async (req, res) => {
        const down = await client.request('/work', { signal: req.prazoSignal });
        res.end(await down.body.text());
      },
      { maxMs: MAX_MS, defaultMs: 200 },
    ),
  );
  await new Promise<void>((resolve) => service.listen({ port: 0, host: '127.0.0.1' }, resolve));
  origin = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
  // Warm both hops (sockets, JIT) with one ordinary call, so that the first hostile case is timed like
  // the others; the log is read per case from its own start.
  await (await request(`${origin}/`)).body.text();
});

afterAll(async () => {
  await client.destroy();
  service.closeAllConnections();
  await new Promise<void>((resolve) => service.close(() => resolve()));
  await dependency.close();
});

const hour = (): string => String(Date.now() + 3_600_000);

/** Headers a hostile caller sends, and whether they reach the dependency at all. */
const hostile: ReadonlyArray<
  [string, () => Record<string, string | string[]>, 'capped' | 'default' | 'refused']
> = [
  ['absolute deadline an hour away', () => ({ 'x-deadline-epoch-ms': hour() }), 'capped'],
  ['grpc-timeout of 99999999 hours', () => ({ 'grpc-timeout': '99999999H' }), 'capped'],
  ['envoy timeout of 9999999999 ms', () => ({ 'x-envoy-expected-rq-timeout-ms': '9999999999' }), 'capped'],
  // Repeated headers arrive joined ("a, b"): each value counts and the earliest valid one wins
  // (#14), an hour here, capped like any other.
  [
    'repeated headers',
    () => ({ 'x-deadline-epoch-ms': [hour(), hour()], 'grpc-timeout': ['1H', '1H'] }),
    'capped',
  ],
  // Malformed (8 KB) values are refused (SPEC D3): the 200 ms default then applies, below the
  // dependency's 250 ms p99, so the service answers at once without calling it (SPEC D4).
  [
    '4 KB values',
    () => ({ 'x-deadline-epoch-ms': `${'0'.repeat(4_096)}${hour()}`, 'grpc-timeout': '9'.repeat(4_096) }),
    'default',
  ],
  // Past Node's header limit (16 KB) the HTTP layer answers 431 before any handler runs.
  ['a 64 KB header', () => ({ 'x-deadline-epoch-ms': '9'.repeat(65_536) }), 'refused'],
];

describe(`a caller cannot extend a service's maximum (${MAX_MS} ms)`, () => {
  it.each(hostile)('%s', async (_name, headers, expected) => {
    const before = dependency.log.total;
    const sentAt = Date.now();
    const t0 = performance.now();
    const res = await request(`${origin}/`, { headers: headers() });
    const body = await res.body.text();
    const heldMs = performance.now() - t0;
    expect(res.statusCode).toBe(expected === 'refused' ? 431 : 504);
    expect(heldMs).toBeLessThan(MAX_MS + SLACK_MS);
    const seen = dependency.log.all.slice(before);
    if (expected === 'refused') {
      expect(seen).toHaveLength(0);
      return;
    }
    if (expected === 'default') {
      expect(body).toContain('DEADLINE_INSUFFICIENT');
      expect(seen).toHaveLength(0);
      return;
    }
    expect(body).toContain('DEADLINE_EXCEEDED');
    expect(heldMs).toBeGreaterThanOrEqual(MAX_MS - 5);
    // The dependency was told the capped deadline, never the caller's...
    expect(seen).toHaveLength(1);
    expect(Number(seen[0]!.deadlineHeader)).toBeLessThanOrEqual(sentAt + MAX_MS + SLACK_MS);
    // ...and the request the service had in flight to it was cut at the deadline.
    await new Promise((r) => setTimeout(r, 20));
    expect(dependency.inFlight?.()).toBe(0);
  });
});
