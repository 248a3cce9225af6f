import type { Clock } from '../clock/clock.js';
import { MAX_TIMER_DELAY_MS } from '../clock/clock.js';
import { currentDeadline } from '../deadline/ambient.js';
import { Deadline, isDeadline } from '../deadline/deadline.js';
import { pickOptions } from '../options/declare.js';
import { readOptions } from '../options/validator.js';
import { EXECUTE_OPTIONS } from './options.js';

/** Throws the `InvalidOptionsError` of one bad per-call option, with the declaration's words. */
export function invalidCallOption(name: string, key: 'deadline' | 'idempotencyKey', value: unknown): never {
  readOptions(`${name}.execute`, pickOptions(EXECUTE_OPTIONS, [key]), { [key]: value });
  throw new Error('unreachable: the option read as valid');
}

/**
 * The deadline a call runs under (SPEC D1, D5): the one given (a `Deadline`, or ms from now), else the
 * ambient one, else the default — and never later than the ambient one, so a callee cannot extend
 * the time its caller has (an explicit 28 s inside a 2 s request still gets 2 s). Throws
 * `InvalidOptionsError` for a `given` that is neither. The executor's one rule, for `execute` and
 * every transport's call alike (`transport.ts`).
 */
export function resolveDeadline(
  given: Deadline | number | undefined,
  name: string,
  defaultDeadlineMs: number,
  clock: Clock,
  now: number,
): Deadline {
  const ambient = currentDeadline();
  if (given === undefined) return ambient ?? Deadline.afterAt(now, defaultDeadlineMs, clock);
  let own: Deadline;
  if (typeof given === 'number') {
    if (!(given >= 0 && given <= MAX_TIMER_DELAY_MS)) invalidCallOption(name, 'deadline', given);
    own = Deadline.afterAt(now, given, clock);
  } else if (isDeadline(given)) own = given;
  else invalidCallOption(name, 'deadline', given);
  return own.min(ambient);
}
