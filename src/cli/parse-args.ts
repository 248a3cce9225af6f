import { UsageError } from './context.js';

/**
 * Strict parsing of numeric flags: `--deadline 1500` is a number, `--deadline 15OO` is an error that
 * names the flag, never a NaN that flows into a calibration.
 */
const DECIMAL = /^[+]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

export function numberArg(flag: string, unit = ''): (raw: string) => number {
  return (raw: string) => {
    const value = DECIMAL.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
    if (!Number.isFinite(value)) {
      throw new UsageError(
        `${flag} must be a non-negative number${unit ? ` of ${unit}` : ''}, got ${JSON.stringify(raw)}`,
      );
    }
    return value;
  };
}

export function choiceArg<T extends string>(flag: string, allowed: readonly T[]): (raw: string) => T {
  return (raw: string) => {
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    throw new UsageError(`${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  };
}
