import { describe, expect, it } from 'vitest';
import { isPrazoError, PrazoError } from './base.js';
import { RetryBudgetExhaustedError } from './budget.js';
import { ConcurrencyLimitError, NoInstanceError } from './capacity.js';
import { DeadlineExceededError, DeadlineInsufficientError } from './deadline.js';
import { DependencyFailedError } from './dependency.js';
import * as guards from './guards.js';
import { InvalidOptionsError } from './options.js';
import {
  BodyTimeoutError,
  ConnectFailedError,
  ConnectTimeoutError,
  QueueTimeoutError,
  ResponseTimeoutError,
} from './timeout.js';

const phase = { dependency: 'supplier', elapsedMs: 401.2, timeoutMs: 400 };
const cases = [
  [
    new DeadlineExceededError({ dependency: 'supplier', elapsedMs: 12 }),
    'DEADLINE_EXCEEDED',
    guards.isDeadlineExceeded,
  ],
  [
    new DeadlineInsufficientError({ dependency: 'supplier', remainingMs: 100, neededMs: 250 }),
    'DEADLINE_INSUFFICIENT',
    guards.isDeadlineInsufficient,
  ],
  [new ConnectTimeoutError(phase), 'CONNECT_TIMEOUT', guards.isConnectTimeout],
  [new ResponseTimeoutError(phase), 'RESPONSE_TIMEOUT', guards.isResponseTimeout],
  [new BodyTimeoutError(phase), 'BODY_TIMEOUT', guards.isBodyTimeout],
  [
    new RetryBudgetExhaustedError({ dependency: 'supplier', originals: 10, extras: 3 }),
    'RETRY_BUDGET_EXHAUSTED',
    guards.isRetryBudgetExhausted,
  ],
  [new InvalidOptionsError('f', ['`a` must be x, got 1']), 'INVALID_OPTIONS', guards.isInvalidOptions],
  [new QueueTimeoutError(phase), 'QUEUE_TIMEOUT', guards.isQueueTimeout],
  [
    new ConnectFailedError({ dependency: 'supplier', elapsedMs: 1, cause: { code: 'ECONNREFUSED' } }),
    'CONNECT_FAILED',
    guards.isConnectFailed,
  ],
  [
    new ConcurrencyLimitError({
      dependency: 'supplier',
      limit: 8,
      inFlight: 8,
      queued: 4,
      maxQueue: 4,
      reason: 'queue-full',
      waitedMs: 0,
    }),
    'CONCURRENCY_LIMITED',
    guards.isConcurrencyLimited,
  ],
  [
    new NoInstanceError({ dependency: 'supplier', hostname: 'supplier.svc' }),
    'NO_INSTANCE',
    guards.isNoInstance,
  ],
  [
    new DependencyFailedError({ dependency: 'supplier', httpStatus: 503 }),
    'DEPENDENCY_FAILED',
    guards.isDependencyFailed,
  ],
] as const;

describe('errors', () => {
  it.each(cases)(
    '%s has a stable code, its own class name and exactly one matching guard',
    (error, code, guard) => {
      expect(error).toBeInstanceOf(PrazoError);
      expect(error).toBeInstanceOf(Error);
      expect(isPrazoError(error)).toBe(true);
      expect(error.code).toBe(code);
      expect(error.name).toBe(error.constructor.name);
      expect(guard(error)).toBe(true);
      const others = cases.filter(([, c]) => c !== code).map(([, , g]) => g);
      expect(others.some((g) => g(error))).toBe(false);
    },
  );

  it('carry their numbers and say them in the message', () => {
    const insufficient = new DeadlineInsufficientError({
      dependency: 'supplier',
      remainingMs: 100.7,
      neededMs: 250,
    });
    expect(insufficient.message).toBe(
      'deadline insufficient for supplier: 100 ms left, needs 250 ms (p99); not called',
    );
    const connect = new ConnectTimeoutError(phase);
    expect(connect).toMatchObject({
      phase: 'connect',
      dependency: 'supplier',
      elapsedMs: 401.2,
      timeoutMs: 400,
    });
    expect(connect.message).toContain('401 ms elapsed, limit 400 ms');
    expect(new BodyTimeoutError(phase).phase).toBe('body');
    expect(new DeadlineExceededError().phase).toBe('deadline');
  });

  it('classify timeouts as a family, and nothing else', () => {
    expect(guards.isTimeoutError(new ResponseTimeoutError(phase))).toBe(true);
    expect(guards.isTimeoutError(new DeadlineExceededError())).toBe(true);
    expect(
      guards.isTimeoutError(new DeadlineInsufficientError({ dependency: 'x', remainingMs: 1, neededMs: 2 })),
    ).toBe(false);
    expect(guards.isTimeoutError(new Error('x'))).toBe(false);
    expect(guards.isTimeoutError({ code: 'CONNECT_TIMEOUT' })).toBe(false);
  });

  it('keep the cause', () => {
    const cause = new Error('socket hang up');
    expect(new RetryBudgetExhaustedError({ dependency: 'a', originals: 1, extras: 1, cause }).cause).toBe(
      cause,
    );
  });

  it('list every invalid option in one message', () => {
    const error = new InvalidOptionsError('createThing', [
      '`a` must be >= 0, got -1',
      '`b` must be true or false, got 3',
    ]);
    expect(error.problems).toHaveLength(2);
    expect(error.message).toContain('`a` must be >= 0, got -1');
    expect(error.message).toContain('`b` must be true or false, got 3');
  });
});

describe('DeadlineInsufficientError numbers', () => {
  it('reports the time left to the microsecond, never a float artifact above what was given', () => {
    const now = 1877.1185000000003;
    const e = new DeadlineInsufficientError({
      dependency: 'd',
      remainingMs: now + 300 - now,
      neededMs: 1000,
    });
    expect(now + 300 - now).toBeGreaterThan(300);
    expect(e.remainingMs).toBe(300);
  });
});
