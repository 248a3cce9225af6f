import { spawn, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { tolerance } from '../matrix/catalogue.js';
import { KINDS } from '../matrix/run-cell.js';
import { formatTable, num } from '../report/table.js';
import { bundleForNode } from './bundle.js';

/**
 * The connect black hole for real (SPEC C2): a network namespace created by the test, its loopback
 * up, a DROP rule on a live server's port (nft, else iptables). Needs root (CAP_NET_ADMIN and
 * CAP_SYS_ADMIN for `unshare -n`); elsewhere the suite is skipped and says why. The backlog-based
 * black hole of the matrix covers the same fault without privileges.
 */

const CONNECT_MS = 300;

/** Which firewall works inside a fresh namespace here, or why none does. */
function probe(): { firewall: string } | { reason: string } {
  if (process.platform !== 'linux') return { reason: 'network namespaces need Linux' };
  if (process.getuid?.() !== 0) return { reason: 'not running as root (unshare -n and a DROP rule need it)' };
  const tries: Array<[string, string]> = [
    ['nft', 'nft add table inet probe'],
    ['iptables', 'iptables -A INPUT -p tcp --dport 9 -j DROP'],
  ];
  const errors: string[] = [];
  for (const [firewall, command] of tries) {
    const r = spawnSync('unshare', ['-n', 'sh', '-c', `ip link set lo up && ${command}`], {
      encoding: 'utf8',
    });
    if (r.status === 0) return { firewall };
    errors.push(`${firewall}: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n')[0]}`);
  }
  return { reason: `no usable firewall in a new namespace (${errors.join('; ')})` };
}

const found = probe();
const skip = 'reason' in found ? found.reason : undefined;
if (skip !== undefined) console.warn(`netns DROP black hole skipped: ${skip}`);

interface ChildReport {
  readonly firewall: string;
  readonly before: { outcome: string };
  readonly results: ReadonlyArray<{ kind: string; outcome: string; firedMs: number }>;
  readonly seen: number;
}

function runInNamespace(script: string, firewall: string): Promise<ChildReport> {
  const args = ['-n', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, script, firewall];
  const child = spawn('unshare', [...args, String(CONNECT_MS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as ChildReport);
      else reject(new Error(`namespace child exited with ${code}: ${err}`));
    });
  });
}

describe.skipIf(skip !== undefined)(`connect black hole in a network namespace (DROP rule)`, () => {
  let report: ChildReport;

  beforeAll(async () => {
    const script = await bundleForNode(new URL('./drop-child.ts', import.meta.url).pathname, 'netns-drop');
    report = await runInNamespace(script, (found as { firewall: string }).firewall);
    const rows = report.results.map((r) => [r.kind, r.outcome, `${num(r.firedMs, 1)} ms`]);
    console.log(
      `\nDROP rule (${report.firewall}) in a fresh namespace, connect timeout ${CONNECT_MS} ms ` +
        `±${tolerance(CONNECT_MS)}; before the rule: ${report.before.outcome}\n` +
        `${formatTable(['call', 'outcome', 'fired after'], rows)}\nrequests the server saw: ${report.seen}\n`,
    );
  }, 120_000);

  it('answers before the rule, then every kind of call fails with CONNECT_TIMEOUT on time', () => {
    expect(report.before.outcome).toBe('HTTP 200');
    expect(report.results.map((r) => r.kind)).toEqual(KINDS);
    for (const r of report.results) {
      expect(r.outcome, r.kind).toBe('CONNECT_TIMEOUT');
      expect(Math.abs(r.firedMs - CONNECT_MS), r.kind).toBeLessThanOrEqual(tolerance(CONNECT_MS));
    }
  });

  it('no request got through the rule: the server saw only the call made before it', () => {
    expect(report.seen).toBe(1);
  });
});
