import { resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_CONFIG_FILE } from '../../config/constants.js';
import { type ConcurrencyCheck, littleArithmetic } from '../../config/dependency.js';
import { type ConfigCheck, checkConfigFile, problemCounts } from '../../config/load.js';
import { formatProblem } from '../../config/problem.js';
import { cliContext, ExitCode } from '../context.js';

/**
 * `prazo check [file]`: validates the central config (SPEC C7) and its budgets (SPEC B1, B2), printing
 * every problem as `file:line:col: severity: key: message`, then what the file yields: each
 * dependency's calibrated timeouts and each endpoint's slices; a p99 assumed from a `kind` (never
 * measured, SPEC C8) is marked ASSUMED and warned about. Problems go to stderr, what the file yields
 * to stdout (`--json`: the whole report on stdout). Exit 2 on errors, 1 on warnings with `--strict`,
 * else 0.
 */
export function register(program: Command): void {
  program
    .command('check')
    .description('validate prazo.config.yaml (or JSON): dependencies, budgets, every problem with its line')
    .argument('[file]', 'config file', DEFAULT_CONFIG_FILE)
    .option('--json', 'print JSON')
    .option('--strict', 'exit 1 on warnings')
    .action((file: string, flags: { json?: boolean; strict?: boolean }, command: Command) => {
      const context = cliContext(command);
      const result = checkConfigFile(resolve(context.io.cwd, file));
      const problems = result.problems.map((p) => ({ ...p, file }));
      // Counted over every problem: past the first 100 the list ends in one line counting the rest.
      const { errors, warnings } = problemCounts(result);
      const counts = `${errors} error(s), ${warnings} warning(s)`;
      if (flags.json) {
        context.io.stdout(
          `${JSON.stringify({ file, errors, warnings, problems, summary: summary(result) }, null, 2)}\n`,
        );
        if (errors > 0) context.io.stderr(`prazo check: ${file}: ${counts}\n`);
      } else {
        // Diagnostics on stderr (an exit-2 run prints nothing on stdout); what the file yields on stdout.
        for (const p of problems) context.io.stderr(`${formatProblem(p)}\n`);
        if (result.config !== undefined) context.io.stdout(render(file, result, counts));
        else context.io.stderr(`\n${counts}\n`);
      }
      context.exitCode =
        errors > 0 ? ExitCode.badInput : flags.strict && warnings > 0 ? ExitCode.warnings : ExitCode.ok;
    });
}

function summary(result: ConfigCheck) {
  if (result.config === undefined) return null;
  return {
    dependencies: [...result.config.dependencies.values()].map((d) => ({
      name: d.options.name,
      p99Ms: d.options.p99Ms,
      ...(d.kind === undefined ? {} : { kind: d.kind }),
      // SPEC C8: a starting value of its kind, not a measurement.
      p99Assumed: d.assumed !== undefined,
      ...d.calibration,
      ...(d.concurrency === undefined ? {} : { concurrency: d.concurrency }),
    })),
    endpoints: [...result.config.endpoints.values()].map((e) => ({
      endpoint: e.budget.endpoint,
      totalSloMs: e.budget.totalSloMs,
      components: e.timeouts.components,
    })),
  };
}

function render(file: string, result: ConfigCheck, counts: string): string {
  let out = '';
  if (result.config !== undefined) {
    out += `${file}: ok\n\ndependencies (p99 → connect / response × attempts)\n`;
    for (const d of result.config.dependencies.values()) {
      const c = d.calibration;
      const from =
        d.assumed !== undefined
          ? ` ASSUMED (${d.assumed.kind}, not measured)`
          : d.p99Source === 'config'
            ? ''
            : ` (from ${d.p99Source.file})`;
      out += `  ${d.options.name.padEnd(16)} p99 ${round(d.options.p99Ms)} ms${from} → ${c.connectMs} / ${c.responseMs} ms × ${c.attempts}\n`;
      if (d.concurrency !== undefined)
        out += `  ${''.padEnd(16)} ${concurrencyLine(d.concurrency, d.pool?.size)}\n`;
    }
    for (const e of result.config.endpoints.values()) {
      out += `\n${e.budget.endpoint}: SLO ${e.budget.totalSloMs} ms\n`;
      for (const c of e.timeouts.components) {
        const dep =
          c.dependency === undefined ? '' : ` → ${c.dependency}: response ${c.responseMs} ms × ${c.attempts}`;
        out += `  ${c.name.padEnd(16)} ${String(c.sliceMs).padStart(5)} ms  ${c.kind}${dep}\n`;
      }
    }
  }
  out += `\n${counts}\n`;
  return out;
}

/** Little's law on the limit (SPEC C6, X7); the warning itself, for a limit below it, is on stderr. */
function concurrencyLine(c: ConcurrencyCheck, poolSize: number | undefined): string {
  const law = `Little's law: ${littleArithmetic(c)}`;
  if (c.limit === undefined) return `no concurrency limit; ${law}; suggest maxInFlight ${c.suggested}`;
  if (c.limit === 'adaptive') return `adaptive concurrency limit; ${law}`;
  const verdict =
    c.limit < c.suggested
      ? `below the suggested ${c.suggested}`
      : poolSize !== undefined && c.limit > poolSize
        ? `above the pool of ${poolSize}`
        : 'fits';
  return `concurrency limit ${c.limit}: ${verdict}; ${law}`;
}

const round = (v: number): number => Math.round(v * 100) / 100;
