import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Two installed copies of prazo (an application's, and the one a library it uses depends on): an
 * error thrown by one is recognised by the other's guards and `instanceof`, by its `Symbol.for` brand
 * and stable `code`. The built package (`dist/`, what npm installs) is copied twice and each copy is
 * imported on its own, so each has its own classes, exactly as two `node_modules/prazo` would.
 */

const REPO = new URL('../../', import.meta.url).pathname;
const DIST = join(REPO, 'dist');
// Inside the repository (its ignored .tmp/), so the copies resolve prazo's dependencies from its node_modules.
let root = '';

type Module = Record<string, unknown>;
// `all`: every name of the entries an error or guard lives in (the root, prazo/http, prazo/server).
const copies: { root: Module; retry: Module; server: Module; all: Module }[] = [];

async function load(dir: string) {
  const entry = (sub: string) => import(pathToFileURL(join(dir, sub)).href) as Promise<Module>;
  const [root, retry, server, http, redis] = await Promise.all(
    ['index.js', 'retry/index.js', 'server/index.js', 'http/index.js', 'redis/index.js'].map(entry),
  );
  return { root: root!, retry: retry!, server: server!, all: { ...root, ...http, ...server, ...redis } };
}

beforeAll(async () => {
  if (!existsSync(join(DIST, 'index.js')))
    throw new Error('dist/ is missing: run npm run build (npm test does)');
  mkdirSync(join(REPO, '.tmp'), { recursive: true });
  root = mkdtempSync(join(REPO, '.tmp', 'copies-'));
  for (const name of ['a', 'b']) {
    cpSync(DIST, join(root, name), { recursive: true });
    copies.push(await load(join(root, name)));
  }
});

afterAll(() => {
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

type ErrorClass = new (...args: never[]) => Error & { code: string };

const CASES: ReadonlyArray<readonly [string, string, string, unknown]> = [
  ['DeadlineExceededError', 'DEADLINE_EXCEEDED', 'isDeadlineExceeded', {}],
  [
    'DeadlineInsufficientError',
    'DEADLINE_INSUFFICIENT',
    'isDeadlineInsufficient',
    { dependency: 'x', remainingMs: 1, neededMs: 2 },
  ],
  [
    'ConnectTimeoutError',
    'CONNECT_TIMEOUT',
    'isConnectTimeout',
    { dependency: 'x', elapsedMs: 1, timeoutMs: 1 },
  ],
  [
    'ResponseTimeoutError',
    'RESPONSE_TIMEOUT',
    'isResponseTimeout',
    { dependency: 'x', elapsedMs: 1, timeoutMs: 1 },
  ],
  ['BodyTimeoutError', 'BODY_TIMEOUT', 'isBodyTimeout', { dependency: 'x', elapsedMs: 1, timeoutMs: 1 }],
  ['QueueTimeoutError', 'QUEUE_TIMEOUT', 'isQueueTimeout', { dependency: 'x', elapsedMs: 1, timeoutMs: 1 }],
  [
    'RetryBudgetExhaustedError',
    'RETRY_BUDGET_EXHAUSTED',
    'isRetryBudgetExhausted',
    { dependency: 'x', originals: 1, extras: 1 },
  ],
  ['ConnectFailedError', 'CONNECT_FAILED', 'isConnectFailed', { dependency: 'x', elapsedMs: 1, cause: null }],
  [
    'ConcurrencyLimitError',
    'CONCURRENCY_LIMITED',
    'isConcurrencyLimited',
    { dependency: 'x', limit: 1, inFlight: 1, queued: 0, maxQueue: 0, reason: 'queue-full', waitedMs: 0 },
  ],
  ['NoInstanceError', 'NO_INSTANCE', 'isNoInstance', { dependency: 'x' }],
  ['ClientClosedError', 'CLIENT_CLOSED', 'isClientClosed', { dependency: 'x' }],
  ['DependencyFailedError', 'DEPENDENCY_FAILED', 'isDependencyFailed', { dependency: 'x', httpStatus: 503 }],
];

describe('errors across two installed copies of prazo (#14 item 4)', () => {
  it('loads two copies whose classes are distinct', () => {
    const [a, b] = copies;
    expect(a!.root.PrazoError).not.toBe(b!.root.PrazoError);
    expect(a!.root.DeadlineExceededError).not.toBe(b!.root.DeadlineExceededError);
  });

  it.each(CASES)(
    '%s of one copy: the other copy’s guards and instanceof recognise it, by code',
    (name, code, guard) => {
      const [a, b] = copies;
      const args = CASES.find((c) => c[0] === name)![3];
      const error = new (a!.all[name] as new (d: unknown) => Error & { code: string })(args);
      expect(error.code).toBe(code);
      expect((b!.root.isPrazoError as (e: unknown) => boolean)(error)).toBe(true);
      expect((b!.all[guard] as (e: unknown) => boolean)(error)).toBe(true);
      expect(error instanceof (b!.root.PrazoError as ErrorClass)).toBe(true);
      expect(error instanceof (b!.all[name] as ErrorClass)).toBe(true);
      // ... and only as what it is: no other class, no other guard.
      for (const [other, , otherGuard] of CASES) {
        if (other === name) continue;
        expect(error instanceof (b!.all[other] as ErrorClass), other).toBe(false);
        expect((b!.all[otherGuard] as (e: unknown) => boolean)(error), otherGuard).toBe(false);
      }
      const timeout = code.endsWith('_TIMEOUT') && code !== 'DEADLINE_EXCEEDED';
      expect(error instanceof (b!.root.PhaseTimeoutError as ErrorClass)).toBe(timeout);
      expect(error instanceof (b!.root.ConnectFailedError as ErrorClass)).toBe(name === 'ConnectFailedError');
      expect(error instanceof (b!.root.InvalidOptionsError as ErrorClass)).toBe(false);
    },
  );

  it("acts on the other copy's errors as on its own: retry verdicts, 504s, invalid options", () => {
    const [a, b] = copies;
    const classify = b!.retry.classifyFailure as (e: unknown) => { kind: string; retryable: boolean };
    const connect = new (a!.root.ConnectTimeoutError as new (d: unknown) => Error)({
      dependency: 'x',
      elapsedMs: 400,
      timeoutMs: 400,
    });
    expect(classify(connect)).toMatchObject({ kind: 'connect', retryable: true });
    const refused = new (a!.root.ConnectFailedError as new (d: unknown) => Error)({
      dependency: 'x',
      elapsedMs: 1,
      cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
    });
    expect(refused instanceof (b!.root.ConnectFailedError as ErrorClass)).toBe(true);
    expect(refused instanceof (b!.root.ConnectTimeoutError as ErrorClass)).toBe(false);
    expect(classify(refused)).toMatchObject({ retryable: true });
    const late = new (a!.root.DeadlineExceededError as new () => Error)();
    expect(classify(late)).toMatchObject({ kind: 'prazo', retryable: false });
    expect((b!.server.isDeadlineError as (e: unknown) => boolean)(late)).toBe(true);
    let invalid: unknown;
    try {
      (a!.root.createRetryBudget as (o: unknown) => unknown)({ maxratio: 1 });
    } catch (error) {
      invalid = error;
    }
    expect((b!.root.isInvalidOptions as (e: unknown) => boolean)(invalid)).toBe(true);
    expect(invalid instanceof (b!.root.InvalidOptionsError as ErrorClass)).toBe(true);
  });

  it("pushes back on the other copy's dependency failures (SPEC X6)", () => {
    const [a, b] = copies;
    const answer = b!.server.pushbackAnswer as (
      e: unknown,
    ) => { status: number; body: { error: string } } | undefined;
    const failed = new (a!.server.DependencyFailedError as new (d: unknown) => Error)({
      dependency: 'x',
      httpStatus: 503,
    });
    expect(answer(failed)).toMatchObject({ status: 503, body: { error: 'DEPENDENCY_FAILED' } });
    const late = new (a!.root.DeadlineInsufficientError as new (d: unknown) => Error)({
      dependency: 'x',
      remainingMs: 1,
      neededMs: 2,
    });
    expect(answer(new Error('wrapped', { cause: late }))).toMatchObject({ status: 504 });
  });

  it("takes the other copy's deadline: instanceof, and a call under it", async () => {
    const [a, b] = copies;
    const deadline = (a!.root.Deadline as { after(ms: number): object }).after(5_000);
    expect(deadline instanceof (b!.root.Deadline as new () => object)).toBe(true);
    const dependency = (
      b!.root.createDependency as (o: unknown) => { execute: (op: unknown, o: unknown) => Promise<number> }
    )({
      name: 'x',
      p99Ms: 10,
    });
    const left = await dependency.execute(
      (ctx: { deadline: { remainingMs(): number } }) => Promise.resolve(ctx.deadline.remainingMs()),
      { idempotent: true, deadline },
    );
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(14);
  });

  it('is not fooled by look-alikes, and keeps instanceof ordinary for a subclass of your own', () => {
    const [a, b] = copies;
    const isPrazoError = b!.root.isPrazoError as (e: unknown) => boolean;
    for (const fake of [
      { code: 'DEADLINE_EXCEEDED' },
      new Error('x'),
      Object.assign(new Error(), { code: 'X' }),
      null,
      'DEADLINE_EXCEEDED',
    ]) {
      expect(isPrazoError(fake)).toBe(false);
      expect(fake instanceof (b!.root.DeadlineExceededError as ErrorClass)).toBe(false);
    }
    const Base = a!.root.DeadlineExceededError as new () => Error;
    class Mine extends Base {}
    expect(new Mine() instanceof Mine).toBe(true);
    expect(new Base() instanceof Mine).toBe(false);
    expect(new Mine() instanceof (b!.root.DeadlineExceededError as ErrorClass)).toBe(true);
  });
});
