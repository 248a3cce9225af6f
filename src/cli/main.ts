#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import * as calibrate from './commands/calibrate.js';
import * as check from './commands/check.js';
import * as demo from './commands/demo.js';
import * as drill from './commands/drill.js';
import * as exportCommand from './commands/export.js';
import * as rules from './commands/rules.js';
import { attachContext, type CliContext, type CliIo, ExitCode, UsageError } from './context.js';
import { escapeControl, LINE_REDRAW } from './escape.js';
import { refuseEmptyValues } from './parse-args.js';

/**
 * `prazo`: the command line. Each command lives in `commands/<name>.ts` and exports
 * `register(program)`; adding one is an import and a call below. `run` is the whole CLI as a function
 * (argv in, exit code out, output through `io`), so tests drive it in-process; it is also the output
 * boundary, where every control character is escaped (`escape.ts`).
 */

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export function createProgram(context: CliContext): Command {
  const { io } = context;
  const program = new Command('prazo')
    .description(
      'Timeouts, deadlines, retry budgets and hedging derived from measurement (p99), not guesses.',
    )
    .version(version(), '-V, --version')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  attachContext(program, context);
  calibrate.register(program);
  check.register(program);
  demo.register(program);
  drill.register(program);
  exportCommand.register(program);
  rules.register(program);
  refuseEmptyValues(program);
  return program;
}

/**
 * Runs the CLI on `argv` (without `node` and the script: `['calibrate', '--p99', '180']`) and resolves
 * to the exit code: 0 ok, 1 warnings with `--strict` or a refused calibration, 2 bad input or usage.
 */
export async function run(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const stdout = io.stdout ?? ((s: string) => process.stdout.write(s));
  const stderr = io.stderr ?? ((s: string) => process.stderr.write(s));
  // The output boundary (#24 item 7): whatever a command prints — its own words, a server's answer,
  // a file's keys, commander's echo of an argument — leaves with its control characters escaped.
  const full: CliIo = {
    stdout: (s) => stdout(escapeControl(s)),
    stderr: (s) => stderr(escapeControl(s)),
    cwd: io.cwd ?? process.cwd(),
  };
  const context: CliContext = {
    io: full,
    exitCode: ExitCode.ok,
    redraw: (s) => stderr(escapeControl(s, LINE_REDRAW)),
  };
  const program = createProgram(context);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return context.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // help and version exit 0; every usage error (unknown option, missing argument) is bad input.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.badInput;
    }
    // A refused input, or what the system refused (a port in use, a full disk, a file the command
    // writes): said like any usage error, with the command, not as a failure of prazo's own.
    if (error instanceof UsageError || isSystemError(error)) {
      const command = argv[0] !== undefined && /^[a-z]+$/.test(argv[0]) ? argv[0] : '';
      full.stderr(`prazo${command ? ` ${command}` : ''}: ${(error as Error).message}\n`);
      return ExitCode.badInput;
    }
    full.stderr(`prazo: unexpected failure: ${error instanceof Error ? error.message : String(error)}\n`);
    return ExitCode.badInput;
  }
}

/** An error of Node's system calls (`listen EADDRINUSE: address already in use 127.0.0.1:8080`). */
function isSystemError(error: unknown): boolean {
  const e = error as { code?: unknown; syscall?: unknown } | null;
  return error instanceof Error && typeof e?.syscall === 'string' && typeof e.code === 'string';
}

/** True when this module is the process entry (`prazo ...` or `node dist/cli/main.js`), not an import. */
function isEntry(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  run(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    () => {
      process.exitCode = ExitCode.badInput;
    },
  );
}
