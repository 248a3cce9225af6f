import { FakeClock } from '../clock/fake.js';
import { Deadline, type HeaderFormat } from '../deadline/deadline.js';
import { createDependency } from '../dependency/dependency.js';
import { type ExecutorPlan, executorOf } from '../dependency/transport.js';
import type { PrazoError } from '../errors/base.js';
import type { HttpAttempt } from './attempt.js';
import type { DispatchController, DispatchHandler, DispatchOptions } from './handler.js';
import type { Route } from './plan.js';
import type { CallOptions } from './request.js';
import { callOn, routeHeaders } from './route.js';

/**
 * A call driven by hand, the way undici drives a handler: the real call and attempt (executor,
 * phases, one timer) on the fake clock, below them a fake dispatcher that only records what it is
 * handed, above them a recording handler. Every instant is exact and every timer counted; the real
 * sockets are in client.test.ts and interceptor.test.ts.
 */

/** The caller's handler (undici's current API), recording what reaches it. */
export class RecordingHandler implements DispatchHandler {
  readonly events: string[] = [];
  error: Error | undefined;
  controller: DispatchController | undefined;
  /** False: the consumer's buffer is full, it pauses on the next chunk. */
  more = true;
  onRequestStart(controller: DispatchController): void {
    this.controller = controller;
  }
  onResponseStart(_c: DispatchController, status: number): void {
    this.events.push(`headers ${status}`);
  }
  onResponseData(controller: DispatchController): void {
    this.events.push('data');
    if (!this.more) controller.pause();
  }
  onResponseEnd(): void {
    this.events.push('complete');
  }
  onResponseError(_c: DispatchController, error: Error): void {
    this.events.push(`error ${(error as PrazoError).code ?? error.name}`);
    this.error = error;
  }
}

/** undici's controller of one dispatched request: `abort` errors the request back, as undici does. */
export class FakeController implements DispatchController {
  readonly aborts: unknown[] = [];
  paused = false;
  aborted = false;
  reason: Error | null = null;
  constructor(readonly attempt: HttpAttempt) {}
  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.aborts.push(reason);
    this.attempt.onResponseError(this, reason);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
  }
}

export interface DrivenCallOptions {
  /** The call's deadline, ms from now. Default 1000. */
  deadlineMs?: number;
  /** The attempt's own limit (the executor's slice), ms. Default: none but the deadline. */
  attemptMs?: number;
  responseMs?: number;
  bodyMs?: number;
  attempts?: number;
  call?: CallOptions;
  method?: DispatchOptions['method'];
  /** Which deadline headers the route writes. Default: the epoch header alone. */
  deadlineHeaders?: HeaderFormat;
}

/** Starts one call on a fake clock; `attempts` are the handlers the fake dispatcher was handed. */
export function driveCall(options: DrivenCallOptions = {}) {
  const clock = new FakeClock();
  const dependency = createDependency({
    name: 'inventory',
    p99Ms: 1,
    attempts: options.attempts ?? 1,
    clock,
  });
  const executor: ExecutorPlan = {
    ...executorOf(dependency)!.plan,
    attemptTimeoutMs: options.attemptMs ?? Number.POSITIVE_INFINITY,
  };
  const route: Route = {
    name: 'inventory',
    clock,
    plan: {
      current: {
        executor,
        connectTimeoutMs: 400,
        responseTimeoutMs: options.responseMs ?? 100,
        bodyTimeoutMs: options.bodyMs ?? 100,
        defaultDeadlineMs: 1_000,
      },
    },
    ...routeHeaders(options.deadlineHeaders ?? {}),
    generateIdempotencyKey: false,
    managed: true,
    instances: undefined,
  };
  const attempts: HttpAttempt[] = [];
  const dispatched: DispatchOptions[] = [];
  const handler = new RecordingHandler();
  const dispatch = (opts: DispatchOptions, attempt: DispatchHandler): boolean => {
    dispatched.push(opts);
    attempts.push(attempt as HttpAttempt);
    return true;
  };
  const deadline = Deadline.after(options.deadlineMs ?? 1_000, { clock });
  callOn(
    route,
    { origin: 'http://inventory.test', path: '/', method: options.method ?? 'GET' },
    handler,
    dispatch,
    { deadline, ...options.call },
  );
  const attempt = attempts[0]!;
  const controller = new FakeController(attempt);
  return { clock, dependency, handler, attempts, attempt, controller, dispatched, deadline };
}

/** Lets the attempt's deferred body-timer arming (a microtask) run. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
