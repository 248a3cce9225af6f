import { InvalidOptionsError } from '../errors/options.js';
import type { Path, RawProblem } from './problem.js';

/**
 * Runs a library constructor or validator on config values and turns its `InvalidOptionsError` into
 * config problems. A problem starting with a backticked option name (`` `maxRatio` must be ... ``,
 * the style of `OptionsValidator`) is placed at that key, so it still points at the right line.
 */
export function fold<R>(problems: RawProblem[], at: Path, run: () => R, prefix: Path = []): R | undefined {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof InvalidOptionsError)) throw error;
    for (const message of error.problems) {
      const named = /^(?:([a-zA-Z]+): )?`([a-zA-Z0-9_.]+)`/.exec(message);
      // "timeouts: `slack` ..." is about the entry's own `slack` key; "retryBudget: `maxRatio`" is nested.
      const nested = named?.[1] !== undefined && named[1] !== 'timeouts' ? [named[1]] : [];
      const keys = named ? [...nested, ...named[2]!.split('.')] : [];
      const text = named?.[1] === 'timeouts' ? message.slice('timeouts: '.length) : message;
      problems.push({ path: [...at, ...prefix, ...keys], message: text, severity: 'error' });
    }
    return undefined;
  }
}
