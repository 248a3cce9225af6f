import type { Clock } from '../clock/clock.js';
import { systemClock } from '../clock/system.js';
import {
  createDeadlineReader,
  type HeadersLike,
  type IncomingDeadline,
  type IncomingDeadlineOptions,
} from '../deadline/headers.js';
import { isInvalidOptions } from '../errors/guards.js';
import { OptionsValidator } from '../options/validator.js';
import {
  defaultServerEvents,
  type ServerEventHub,
  type ServerEventListener,
  type ServerFramework,
} from './events.js';

/**
 * Options shared by `deadlineMiddleware`, `fastifyDeadline` and `withIncomingDeadline`.
 * Validated once, when the middleware is built; every problem is reported together.
 */
export interface ServerDeadlineOptions extends IncomingDeadlineOptions {
  /**
   * Deadline of a request that brings none (or only malformed ones), in ms (SPEC D3).
   * Default 2000; range (0, maxMs].
   */
  readonly defaultMs?: number;
  /**
   * The most a caller can make this service hold a request, in ms: the incoming deadline becomes
   * `min(received, now + maxMs)` (SPEC D2). Default 10000; range (0, 2^31-1].
   */
  readonly maxMs?: number;
  /**
   * How far the callers' wall clocks run ahead of ours, in ms, applied to `x-deadline-epoch-ms`
   * (SPEC D8). Default 0; range [-3600000, 3600000].
   */
  readonly clockSkewMs?: number;
  /** Where time comes from. Default: the system clock. */
  readonly clock?: Clock;
  /** Called with every event of this middleware (in addition to the hub). Default: none. */
  readonly onEvent?: ServerEventListener;
  /** The hub to publish events to. Default: the process-wide one (`onServerEvent`). */
  readonly events?: ServerEventHub;
}

/** Options after validation: what a request needs on the hot path. */
export interface ResolvedServerOptions {
  readonly framework: ServerFramework;
  readonly clock: Clock;
  readonly read: (headers: HeadersLike) => IncomingDeadline;
  readonly events: ServerEventHub;
  readonly onEvent: ServerEventListener | undefined;
}

const CLOCK_METHODS = ['now', 'epochNow', 'setTimer', 'clearTimer'] as const;

function isClock(value: unknown): value is Clock {
  if (value === null || typeof value !== 'object') return false;
  const record = value as Record<string, unknown>;
  return CLOCK_METHODS.every((m) => typeof record[m] === 'function');
}

/** Validates `options` once for `context` (the public function's name); throws one InvalidOptionsError. */
export function resolveServerOptions(
  context: string,
  framework: ServerFramework,
  options: ServerDeadlineOptions = {},
): ResolvedServerOptions {
  const v = new OptionsValidator(context);
  if (options === null || typeof options !== 'object') {
    v.problem(`options must be an object, got ${options === null ? 'null' : typeof options}`);
    v.done();
  }
  if (options.clock !== undefined && !isClock(options.clock)) {
    v.problem('`clock` must implement now, epochNow, setTimer and clearTimer');
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
    v.problem(`\`onEvent\` must be a function, got ${typeof options.onEvent}`);
  }
  const events = options.events;
  if (events !== undefined && (events === null || typeof events.onServerEvent !== 'function')) {
    v.problem('`events` must be a ServerEventHub (from createServerEventHub)');
  }
  const clock = isClock(options.clock) ? options.clock : systemClock;
  let read: ResolvedServerOptions['read'] = () => {
    throw new Error('unreachable: options were invalid');
  };
  try {
    const { defaultMs, maxMs, clockSkewMs } = options;
    read = createDeadlineReader({ defaultMs, maxMs, clockSkewMs, clock });
  } catch (error) {
    if (!isInvalidOptions(error)) throw error;
    for (const problem of error.problems) v.problem(problem);
  }
  v.done();
  return {
    framework,
    clock,
    read,
    events: events ?? defaultServerEvents,
    onEvent: typeof options.onEvent === 'function' ? options.onEvent : undefined,
  };
}
