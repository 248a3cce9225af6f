import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { sleep } from '../../src/clock/clock.js';
import { systemClock } from '../../src/clock/system.js';
import { freePort, get, HOST } from './loopback.js';

/**
 * A real Prometheus server (Debian's `prometheus` package), on 127.0.0.1 only, scraping given targets
 * every second (or every `intervalMs`) and evaluating given rule files: the end-to-end test asks it to
 * run the generated panel queries and rules against what the exporter really serves.
 */

export const hasPrometheus = (() => {
  try {
    execFileSync('prometheus', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export interface PrometheusServer {
  readonly url: string;
  /** Runs an instant query; resolves with the API's `data.result`, throws on an API error. */
  query(expr: string): Promise<unknown[]>;
  /** `/api/v1/rules`: every alerting rule with its health and last error. */
  rules(): Promise<{ name: string; health: string; lastError?: string; lastEvaluation: string }[]>;
  close(): Promise<void>;
}

export async function startPrometheus(
  targets: readonly string[],
  rules: string,
  /** Scrape and rule evaluation interval, in ms (Prometheus takes sub-second ones). Default 1000. */
  intervalMs = 1000,
): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'prazo-prometheus-'));
  writeFileSync(join(dir, 'rules.yaml'), rules);
  const interval = intervalMs % 1000 === 0 ? `${intervalMs / 1000}s` : `${intervalMs}ms`;
  const config = {
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: [join(dir, 'rules.yaml')],
    scrape_configs: [{ job_name: 'orders', static_configs: [{ targets: [...targets] }] }],
  };
  writeFileSync(join(dir, 'prometheus.yml'), stringify(config));
  const port = await freePort();
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=${HOST}:${port}`,
    ],
    { stdio: 'ignore' },
  );
  const url = `http://${HOST}:${port}`;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i += 1) {
    const ready = await get(`${url}/-/ready`).catch(() => undefined);
    if (ready?.status === 200) break;
    if (i > 100 || child.exitCode !== null) {
      await close();
      throw new Error('prometheus did not become ready');
    }
    await sleep(systemClock, 100);
  }
  const api = async (path: string) => {
    const { body } = await get(`${url}${path}`);
    const parsed = JSON.parse(body) as { status: string; error?: string; data: unknown };
    if (parsed.status !== 'success') throw new Error(`${path}: ${parsed.error ?? body}`);
    return parsed.data;
  };
  return {
    url,
    query: async (expr) =>
      ((await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)) as { result: unknown[] }).result,
    rules: async () => {
      const data = (await api('/api/v1/rules?type=alert')) as { groups: { rules: never[] }[] };
      return data.groups.flatMap((g) => g.rules);
    },
    close,
  };
}
