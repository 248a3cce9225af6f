import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { report } from '../lib/child.mjs';

/**
 * One fleet calibration, end to end through the CLI (`prazo calibrate --prometheus URL --config FILE
 * --window 7d --step 1h --json`): `--dependencies` entries in a config, each with its histogram in a
 * Prometheus stand-in on loopback that answers every range query after `--query-ms` of "evaluation"
 * (a real Prometheus takes tens of ms per range query over a week) with a week of hourly points: 15
 * bucket series and 3 outcome series per dependency. Reports the wall time of the command, its
 * queries and how many were in flight at most. The stand-in runs in this process: its share of the
 * CPU is small (a timer and a JSON body per query), and the same for every concurrency compared.
 */
const { values } = parseArgs({
  options: {
    dependencies: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '8' },
    'query-ms': { type: 'string', default: '25' },
  },
});
const dependencies = Number(values.dependencies);
const queryMs = Number(values['query-ms']);
const { run } = await import('../../dist/cli/main.js');

const LES = [
  '0.005',
  '0.01',
  '0.025',
  '0.05',
  '0.075',
  '0.1',
  '0.25',
  '0.5',
  '0.75',
  '1',
  '2.5',
  '5',
  '7.5',
  '10',
  '+Inf',
];
/** Cumulative share of calls per bucket: a p99 around 80 ms. */
const SHARE = [0.01, 0.05, 0.3, 0.7, 0.95, 0.995, 0.999, 1, 1, 1, 1, 1, 1, 1, 1];
let inFlight = 0;
let maxInFlight = 0;
let queries = 0;
const server = createServer((req, res) => {
  inFlight += 1;
  maxInFlight = Math.max(maxInFlight, inFlight);
  queries += 1;
  let body = '';
  req.on('data', (c) => {
    body += c;
  });
  req.on('end', () => {
    const form = new URLSearchParams(body);
    const query = form.get('query') ?? '';
    const start = Number(form.get('start'));
    const end = Number(form.get('end'));
    const step = Number(form.get('step'));
    const times = [];
    for (let t = start; t <= end; t += step) times.push(t);
    const series = query.includes('_bucket')
      ? LES.map((le, i) => ({ metric: { le }, values: times.map((t) => [t, String(1000 * SHARE[i])]) }))
      : [
          { metric: { prazo_outcome: 'success' }, values: times.map((t) => [t, '1000']) },
          { metric: { prazo_outcome: 'error' }, values: times.map((t) => [t, '2']) },
          { metric: { prazo_outcome: 'timeout' }, values: times.map((t) => [t, '1']) },
        ];
    const text = JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: series } });
    setTimeout(() => {
      inFlight -= 1;
      res.setHeader('content-type', 'application/json');
      res.end(text);
    }, queryMs);
  });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${server.address().port}`;

const dir = mkdtempSync(path.join(os.tmpdir(), 'prazo-bench-fleet-'));
const entries = Array.from(
  { length: dependencies },
  (_, i) => `  - name: dep-${i}\n    p99Ms: 120\n    histogram: { prometheus: {} }\n`,
);
writeFileSync(path.join(dir, 'prazo.config.yaml'), `version: 1\ndependencies:\n${entries.join('')}`);
let out = '';
let err = '';
const t0 = performance.now();
const code = await run(
  [
    'calibrate',
    '--prometheus',
    url,
    '--config',
    'prazo.config.yaml',
    '--window',
    '7d',
    '--step',
    '1h',
    '--end',
    '1767225600',
    '--concurrency',
    values.concurrency,
    '--json',
  ],
  { stdout: (s) => (out += s), stderr: (s) => (err += s), cwd: dir },
);
const wallMs = performance.now() - t0;
server.close();
rmSync(dir, { recursive: true, force: true });
const parsed = JSON.parse(out);
const calibrated = parsed.dependencies.filter((d) => d.recommendation !== undefined).length;
if (code !== 0 || calibrated !== dependencies) {
  throw new Error(`prazo calibrate exited ${code}, ${calibrated}/${dependencies} calibrated: ${err}`);
}
report({
  dependencies,
  concurrency: Number(values.concurrency),
  queryMs,
  wallMs,
  queries,
  maxInFlight,
  calibrated,
});
