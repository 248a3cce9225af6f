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
  readonly io: CliIo;
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
