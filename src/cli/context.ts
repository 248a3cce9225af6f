import type { Command } from 'commander';

/**
 * What a command needs from the outside world, injectable so the CLI runs in-process in tests:
 * where text goes, where relative paths start, and how files are read.
 */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Directory relative paths are resolved against. Default `process.cwd()`. */
  readonly cwd: string;
}

/** Exit codes shared by every command. */
export const ExitCode = Object.freeze({
  ok: 0,
  /** Warnings with `--strict`, or a refusal (a degraded window): the input was understood. */
  warnings: 1,
  /** Bad input or usage: a one-line reason on stderr. */
  badInput: 2,
});

export interface CliContext {
  /** Where commands print; `run` escapes every control character on the way out (`escape.ts`). */
  readonly io: CliIo;
  /**
   * stderr for the progress display on a terminal: escaped like `io.stderr`, except the line redraw
   * (`LINE_REDRAW`). Undefined outside `run` (then `io.stderr`).
   */
  readonly redraw?: (text: string) => void;
  /** The exit code `run` returns; commands raise it, never lower it. */
  exitCode: number;
}

const contexts = new WeakMap<Command, CliContext>();

export function attachContext(program: Command, context: CliContext): void {
  contexts.set(program, context);
}

/** The context of the program a (sub)command belongs to. */
export function cliContext(command: Command): CliContext {
  let c: Command | null = command;
  while (c !== null) {
    const found = contexts.get(c);
    if (found !== undefined) return found;
    c = c.parent;
  }
  throw new Error('prazo CLI: command used outside run()');
}

/** Thrown by a command for bad input: `run` prints `prazo <command>: <message>` and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Loads a command's implementation when the command runs, not when the CLI starts: `prazo demo` and
 * `prazo drill` drive HTTP through undici, an optional peer of the package, so `prazo check`,
 * `calibrate`, `rules` and `export` must run without it. A missing undici is said in one line.
 */
export async function loadWithUndici<T>(command: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && /'undici'/.test(e.message ?? ''))
      throw new UsageError(`prazo ${command} needs undici, an optional peer of prazo: npm install undici`);
    throw error;
  }
}
