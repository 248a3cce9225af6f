#!/usr/bin/env node
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runCalibrateSuite } from './calibrate/suite.mjs';
import { runEffectSuite } from './effect/suite.mjs';
import { runHttpSuite } from './http/suite.mjs';
import { describeMachine } from './lib/machine.mjs';
import { renderMarkdown } from './lib/table.mjs';
import { runMemorySuite } from './memory/suite.mjs';
import { runMicroSuite } from './micro/suite.mjs';

/**
 * `npm run bench` (the full suite, a few minutes) or `npm run bench -- --quick` (a smoke run of every
 * suite, well under a minute, which `npm test` exercises so the benchmarks cannot rot).
 *
 * Options: `--quick`; `--out FILE` (default bench/results.json, or a temporary file in quick mode so a
 * smoke run never replaces the last full results); `--only http,micro,memory,effect,calibrate`.
 * Writes the results as JSON, prints the markdown report on stdout and progress on stderr.
 * Imports prazo from `dist/`: build first (`npm run build`; `npm test` does it).
 */
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    only: { type: 'string' },
  },
});

const SUITES = ['http', 'micro', 'memory', 'effect', 'calibrate'];
const quick = values.quick;
const only = values.only ? values.only.split(',').map((s) => s.trim()) : SUITES;
for (const s of only)
  if (!SUITES.includes(s)) throw new Error(`--only: unknown suite "${s}" (${SUITES.join(', ')})`);
const here = path.dirname(fileURLToPath(import.meta.url));
const out =
  values.out ?? (quick ? path.join(os.tmpdir(), 'prazo-bench-quick.json') : path.join(here, 'results.json'));

/** Every bound of the run is here: full mode stays within a few minutes, quick mode well under one. */
export const SETTINGS = {
  full: {
    http: { runs: 7, warmupMs: 700, durationMs: 2_000, concurrency: 50 },
    micro: { runs: 3, batchMs: 50, batches: 10 },
    memory: { runs: 3, rates: [1_000, 100_000], windowMs: 10_000, steadyMs: 1_000, prazoCopies: 25 },
    effect: { runs: 3, outageSeconds: 60, rps: 100, hedgeRequests: 20_000 },
    calibrate: { runs: 3, dependencies: 200, queryMs: 25 },
  },
  quick: {
    http: { runs: 1, warmupMs: 100, durationMs: 200, concurrency: 50 },
    micro: { runs: 1, batchMs: 5, batches: 3 },
    memory: { runs: 1, rates: [100_000], windowMs: 1_000, steadyMs: 50, prazoCopies: 2 },
    effect: { runs: 1, outageSeconds: 20, rps: 100, hedgeRequests: 2_000 },
    calibrate: { runs: 1, dependencies: 20, queryMs: 5 },
  },
};

const log = (line) => process.stderr.write(`${line}\n`);
const settings = quick ? SETTINGS.quick : SETTINGS.full;
const started = performance.now();
const results = {
  schema: 'prazo-bench/1',
  mode: quick ? 'quick' : 'full',
  startedAt: new Date().toISOString(),
  machine: describeMachine(),
  durationMs: 0,
  goals: [],
};

const runners = {
  http: () => runHttpSuite({ ...settings.http, log }),
  micro: () => runMicroSuite({ ...settings.micro, log }),
  memory: () => runMemorySuite({ ...settings.memory, log }),
  effect: () => runEffectSuite({ ...settings.effect, log }),
  calibrate: () => runCalibrateSuite({ ...settings.calibrate, log }),
};
for (const suite of SUITES) {
  if (!only.includes(suite)) continue;
  log(`${suite}...`);
  results[suite] = await runners[suite]();
  results.goals.push(...(results[suite].goals ?? []));
}
results.durationMs = Math.round(performance.now() - started);

mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(`${renderMarkdown(results)}\n`);
log(`results written to ${out}`);
