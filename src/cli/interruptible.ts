import { isInvalidOptions } from '../errors/guards.js';
import { type CliContext, UsageError } from './context.js';

/** Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const INTERRUPTED = 130;

/**
 * Runs a long command (`demo`, `drill`) so that Ctrl-C aborts its work through `signal` — the work
 * stops every process it started — and exits 130 with `interruptedMessage`; invalid options become a
 * usage error (exit 2). `onFailure` runs before either, e.g. to close a progress display.
 */
export async function runInterruptible(
  context: CliContext,
  interruptedMessage: string,
  work: (signal: AbortSignal) => Promise<void>,
  onFailure: () => void = () => {},
): Promise<void> {
  const controller = new AbortController();
  const onSigint = (): void => controller.abort(new Error('interrupted'));
  process.once('SIGINT', onSigint);
  try {
    await work(controller.signal);
  } catch (error) {
    onFailure();
    if (controller.signal.aborted) {
      context.io.stderr(`${interruptedMessage}\n`);
      context.exitCode = INTERRUPTED;
      return;
    }
    if (isInvalidOptions(error)) throw new UsageError(error.problems.join('; '));
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
