import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './api-report.js';

/**
 * Several TypeScript projects of one directory compiled as `tsc -b` compiles them: one child process runs
 * TypeScript's solution builder (what `tsc -b --force` runs) over every config, so the projects share
 * the declaration files it parsed and bound (`@types/node`, the dependencies', prazo's), which
 * `tsc -p` per project reads again each time; each project still is its own program, with its own
 * options, diagnostics and exit status. For the package tests (consumer.test.ts, declarations.test.ts).
 */

const run = promisify(execFile);
const TYPESCRIPT = join(REPO, 'node_modules', 'typescript');

export interface Compiled {
  /** The project's exit status (`ts.ExitStatus`: 0 when it compiled without a diagnostic). */
  readonly code: number;
  /** Its diagnostics as `tsc` prints them without `--pretty` (`app.cts(3,118): error TS1479: ...`). */
  readonly output: string;
}

/**
 * The child: argv is TypeScript's path, then the configs. Diagnostics reported while the builder picks a
 * project (its config read) and while it builds it belong to that project; what is reported after the
 * last one goes to every project (none may hide it), and a project the builder never reached fails.
 */
const BUILD = `
const ts = require(process.argv[1]);
const configs = process.argv.slice(2);
const format = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => process.cwd(), getNewLine: () => ts.sys.newLine };
let output = '';
const report = (d) => { output += ts.formatDiagnostic(d, format); };
const host = ts.createSolutionBuilderHost(ts.sys, undefined, report, report);
const builder = ts.createSolutionBuilder(host, configs, { force: true });
const results = {};
for (let project = builder.getNextInvalidatedProject(); project; project = builder.getNextInvalidatedProject()) {
  const code = project.done();
  results[project.project] = { code, output };
  output = '';
}
process.stdout.write(JSON.stringify({ results, leftover: output }));
`;

/** Compiles `configs` (paths relative to `dir`), keyed by the names given. */
export async function buildProjects(dir: string, configs: readonly string[]): Promise<Map<string, Compiled>> {
  let answer: { results: Record<string, Compiled>; leftover: string };
  try {
    const { stdout } = await run(process.execPath, ['-e', BUILD, TYPESCRIPT, ...configs], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    });
    answer = JSON.parse(stdout) as typeof answer;
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string; message?: string };
    const failed = {
      code: typeof e.code === 'number' ? e.code : -1,
      output: `${e.stdout ?? ''}${e.stderr ?? e.message}`,
    };
    return new Map(configs.map((c) => [c, failed]));
  }
  const byPath = new Map(Object.entries(answer.results).map(([path, r]) => [resolve(path), r]));
  return new Map(
    configs.map((c): [string, Compiled] => {
      const r = byPath.get(resolve(dir, c)) ?? { code: -1, output: 'not built by the solution builder\n' };
      return [c, { code: r.code, output: r.output + answer.leftover }];
    }),
  );
}
