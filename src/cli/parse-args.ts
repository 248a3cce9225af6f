import type { Command, Option } from 'commander';
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

/**
 * Every option and positional argument of `program` and its commands refuses an empty value
 * (`--out=`, `--out "$UNSET"`, `prazo check ""`): a path that is empty resolves to the working
 * directory, so `prazo rules --out=` wrote there, and an empty name or URL is never what was meant.
 * An option given twice keeps the last value (commander's convention, which scripts use to
 * override a default flag).
 */
export function refuseEmptyValues(program: Command): void {
  for (const command of [program, ...program.commands]) {
    for (const option of command.options as readonly Option[]) {
      const flag = option.long ?? option.short ?? option.name();
      command.on(`option:${option.name()}`, (value: unknown) => {
        if (typeof value === 'string' && value.trim() === '')
          throw new UsageError(`${flag} needs a value, got ${JSON.stringify(value)}`);
      });
    }
  }
  // Runs before any command's action, on its positional arguments as parsed.
  program.hook('preAction', (_, action) => {
    action.registeredArguments.forEach((argument, i) => {
      const value = action.processedArgs[i];
      if (typeof value === 'string' && value.trim() === '')
        throw new UsageError(`<${argument.name()}> needs a value, got ${JSON.stringify(value)}`);
    });
  });
}
