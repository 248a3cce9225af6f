import { type ChildProcess, fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool, request as undiciRequest } from 'undici';
import { createHttpClient, type HttpClientOptions } from './index.js';

/**
 * A quick throughput comparison (issue 9 builds the real benchmark): loopback keep-alive GET,
 * concurrency 50, the server in a child process, variants alternated round by round so that the
 * machine's drift hits them alike. Reports requests/s and the client process's CPU per request.
 */

export interface ThroughputOptions {
  readonly rounds?: number;
  readonly roundMs?: number;
  readonly concurrency?: number;
  /** Options of the prazo client under test (name and origin are filled in). */
  readonly client?: Partial<HttpClientOptions>;
}

export interface VariantResult {
  readonly requestsPerSecond: number;
  readonly cpuMicrosPerRequest: number;
}

const SERVER = `
const s = require('node:http').createServer((req, res) => res.end('ok'));
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.send(s.address().port));
`;

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function compareThroughput(
  options: ThroughputOptions = {},
): Promise<Record<string, VariantResult>> {
  const { rounds = 9, roundMs = 1_500, concurrency = 50 } = options;
  const script = join(tmpdir(), `prazo-throughput-server-${process.pid}.cjs`);
  writeFileSync(script, SERVER);
  const child: ChildProcess = fork(script);
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
  const origin = `http://127.0.0.1:${port}`;
  const pool = new Pool(origin);
  const client = createHttpClient({
    name: 'bench',
    origin,
    p99Ms: 200,
    hedge: { minDelayMs: 20 },
    ...options.client,
  });
  type Body = { body: { dump(): Promise<void> } };
  const variants: Record<string, () => Promise<Body>> = {
    'undici.request': () => undiciRequest(`${origin}/x`),
    'pool.request': () => pool.request({ path: '/x', method: 'GET' }),
    'prazo request': () => client.request('/x'),
  };
  const run = async (fn: () => Promise<Body>, ms: number): Promise<[number, number]> => {
    let n = 0;
    const end = performance.now() + ms;
    const cpu = process.cpuUsage();
    const worker = async (): Promise<void> => {
      while (performance.now() < end) {
        await (await fn()).body.dump();
        n += 1;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const used = process.cpuUsage(cpu);
    return [(n * 1000) / ms, (used.user + used.system) / n];
  };
  try {
    for (const fn of Object.values(variants)) await run(fn, 300); // warm up
    const samples = Object.fromEntries(
      Object.keys(variants).map((k) => [k, [[], []] as [number[], number[]]]),
    );
    for (let r = 0; r < rounds; r += 1) {
      for (const [name, fn] of Object.entries(variants)) {
        const [rps, cpu] = await run(fn, roundMs);
        samples[name]![0].push(rps);
        samples[name]![1].push(cpu);
      }
    }
    return Object.fromEntries(
      Object.entries(samples).map(([name, [rps, cpu]]) => [
        name,
        { requestsPerSecond: median(rps), cpuMicrosPerRequest: median(cpu) },
      ]),
    );
  } finally {
    await client.close();
    await pool.close();
    child.kill();
  }
}
