import { execFileSync } from 'node:child_process';
import { createHttpClient } from '../../../src/http/index.js';
import { answerOk, startHttpFault } from '../faults/http-faults.js';
import { type CallKind, codeOf, KINDS } from '../matrix/run-cell.js';

/**
 * Runs as root inside a fresh network namespace (see netns.test.ts), where it may change the
 * firewall without touching the host's. A healthy server listens on 127.0.0.1; one call proves it
 * answers; then a DROP rule on its port makes every SYN vanish, as when a host disappears behind a
 * firewall, and prazo's client calls it once per kind. Prints one JSON line:
 * `{ firewall, before, results: [{ kind, outcome, firedMs }], seen }`.
 */

interface ChildResult {
  readonly kind: CallKind;
  readonly outcome: string;
  readonly firedMs: number;
}

/** Adds a rule dropping inbound TCP to `port`, with nft or iptables (whichever the parent found). */
function dropPort(firewall: string, port: number): void {
  if (firewall === 'nft') {
    execFileSync('nft', ['add', 'table', 'inet', 'prazo']);
    execFileSync('nft', ['add', 'chain', 'inet', 'prazo', 'in', '{ type filter hook input priority 0; }']);
    execFileSync('nft', ['add', 'rule', 'inet', 'prazo', 'in', 'tcp', 'dport', String(port), 'drop']);
  } else {
    execFileSync('iptables', ['-A', 'INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'DROP']);
  }
}

async function call(origin: string, kind: CallKind, connectMs: number): Promise<ChildResult> {
  // One attempt, and an attempt timeout (ceil(p99 × 1.4)) above the connect timeout: the connect
  // timer alone decides, and is measured here.
  const client = createHttpClient({
    name: 'netns',
    origin,
    p99Ms: connectMs,
    attempts: 1,
    connectTimeoutMs: connectMs,
  });
  const t0 = performance.now();
  let outcome: string;
  try {
    const res = await client.request(`/call/${kind}`, {
      method: kind === 'GET' ? 'GET' : 'POST',
      ...(kind === 'GET' ? {} : { body: '{}' }),
      ...(kind === 'POST+key' ? { idempotencyKey: 'netns-key' } : {}),
      deadline: connectMs * 5,
    });
    await res.body.dump();
    outcome = `HTTP ${res.statusCode}`;
  } catch (error) {
    outcome = codeOf(error);
  }
  const firedMs = performance.now() - t0;
  await client.destroy();
  return { kind, outcome, firedMs };
}

async function main(): Promise<void> {
  const [firewall = 'nft', connectArg = '300'] = process.argv.slice(2);
  const connectMs = Number(connectArg);
  const server = await startHttpFault('behind DROP', answerOk);
  const before = await call(server.origin, 'GET', connectMs);
  dropPort(firewall, Number(new URL(server.origin).port));
  const results: ChildResult[] = [];
  for (const kind of KINDS) results.push(await call(server.origin, kind, connectMs));
  const seen = server.log.total;
  await server.close();
  process.stdout.write(`${JSON.stringify({ firewall, before, results, seen })}\n`);
}

await main();
