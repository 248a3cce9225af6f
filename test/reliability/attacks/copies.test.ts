import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Attacks on the newest error across two installed copies of prazo (an application's and a library's,
 * as two `node_modules/prazo` would be; copied from the built `dist/` as src/errors/copies.test.ts
 * does): a THROTTLED refusal made by one copy's throttle must be recognised by the other's guards,
 * `instanceof`, retry classifier, pushback (HTTP and Connect), and not retried by its executor — by
 * its `Symbol.for` brand and stable code, never by class identity.
 */

const REPO = new URL('../../../', import.meta.url).pathname;
const DIST = join(REPO, 'dist');
let root = '';

type Module = Record<string, unknown>;
type ErrorClass = new (...args: never[]) => Error & { code: string };
const copies: { root: Module; retry: Module; server: Module; connect: Module }[] = [];

beforeAll(async () => {
  if (!existsSync(join(DIST, 'index.js')))
    throw new Error('dist/ is missing: run npm run build (npm test does)');
  mkdirSync(join(REPO, '.tmp'), { recursive: true });
  root = mkdtempSync(join(REPO, '.tmp', 'attack-copies-'));
  for (const name of ['a', 'b']) {
    const dir = join(root, name);
    cpSync(DIST, dir, { recursive: true });
    const entry = (sub: string) => import(pathToFileURL(join(dir, sub)).href) as Promise<Module>;
    const [r, retry, server, connect] = await Promise.all(
      ['index.js', 'retry/index.js', 'server/index.js', 'connect/index.js'].map(entry),
    );
    copies.push({ root: r!, retry: retry!, server: server!, connect: connect! });
  }
});

afterAll(() => {
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

const DETAILS = { dependency: 'supplier', requests: 40, accepts: 2, probability: 0.87, windowMs: 1_000 };

/** A ThrottledError made for real by copy `a`'s throttle: a dependency failing everything. */
async function realRefusal(a: Module): Promise<unknown> {
  const createDependency = a.createDependency as (o: unknown) => {
    execute(op: () => Promise<unknown>, o?: unknown): Promise<unknown>;
  };
  const dep = createDependency({ name: 'supplier', p99Ms: 50, attempts: 1, throttle: { minRequests: 2 } });
  const refused = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
  for (let i = 0; i < 200; i += 1) {
    const error = await dep.execute(() => Promise.reject(refused)).catch((e: unknown) => e);
    if ((error as { code?: string }).code === 'THROTTLED') return error;
  }
  throw new Error('the throttle never refused');
}

describe('ThrottledError across two installed copies (#23)', () => {
  it('the copies are distinct; each has the class, the guard and the code', () => {
    const [a, b] = copies;
    expect(a!.root.ThrottledError).not.toBe(b!.root.ThrottledError);
    for (const c of copies) {
      expect(typeof c.root.ThrottledError).toBe('function');
      expect(typeof c.root.isThrottled).toBe('function');
      expect((c.root.ErrorCode as Record<string, string>).THROTTLED).toBe('THROTTLED');
    }
  });

  it("one copy's refusal is the other's ThrottledError: guard, instanceof, fields; and nothing else", async () => {
    const [a, b] = copies;
    for (const error of [
      new (a!.root.ThrottledError as new (d: unknown) => Error)(DETAILS),
      await realRefusal(a!.root),
    ]) {
      expect((b!.root.isThrottled as (e: unknown) => boolean)(error)).toBe(true);
      expect((b!.root.isPrazoError as (e: unknown) => boolean)(error)).toBe(true);
      expect(error instanceof (b!.root.ThrottledError as ErrorClass)).toBe(true);
      expect(error instanceof (b!.root.PrazoError as ErrorClass)).toBe(true);
      for (const other of [
        'ConcurrencyLimitError',
        'RetryBudgetExhaustedError',
        'DeadlineInsufficientError',
        'PhaseTimeoutError',
        'DeadlineExceededError',
      ])
        expect(error instanceof (b!.root[other] as ErrorClass), other).toBe(false);
      for (const guard of [
        'isConcurrencyLimited',
        'isRetryBudgetExhausted',
        'isDeadlineExceeded',
        'isDeadlineInsufficient',
      ])
        expect((b!.root[guard] as (e: unknown) => boolean)(error), guard).toBe(false);
      const t = error as unknown as typeof DETAILS & { code: string };
      expect(t.code).toBe('THROTTLED');
      expect(t.dependency).toBe('supplier');
      expect(t.probability).toBeGreaterThan(0);
      expect(t.probability).toBeLessThanOrEqual(0.9);
    }
  });

  it('the other copy does not retry it, pushes it back as 503 on HTTP and unavailable on Connect', async () => {
    const [a, b] = copies;
    const error = await realRefusal(a!.root);
    const classify = b!.retry.classifyFailure as (e: unknown) => { retryable: boolean };
    expect(classify(error).retryable).toBe(false);
    const answer = (
      b!.server.pushbackAnswer as (e: unknown) => {
        status: number;
        headers: Record<string, string>;
        body: { error: string };
      }
    )(new Error('checkout failed', { cause: error }));
    expect(answer.status).toBe(503);
    expect(answer.headers['grpc-retry-pushback-ms']).toBe('-1');
    expect(answer.body.error).toBe('THROTTLED');
    const connectError = (
      b!.connect.toConnectServerError as (e: unknown) => { code: number; metadata: Headers }
    )(error);
    expect(connectError.code).toBe(14); // Code.Unavailable
    expect(connectError.metadata.get('grpc-retry-pushback-ms')).toBe('-1');
    const client = (b!.connect.toConnectError as (e: unknown) => { code: number; cause: unknown })(error);
    expect(client.code).toBe(14);
    expect(client.cause).toBe(error);
  });

  it("the other copy's executor runs an operation that fails with it exactly once (idempotent, 3 attempts)", async () => {
    const [a, b] = copies;
    const error = await realRefusal(a!.root);
    const dep = (
      b!.root.createDependency as (o: unknown) => {
        execute(op: () => Promise<unknown>, o?: unknown): Promise<unknown>;
        budget: { state(): { extras: number } };
      }
    )({ name: 'gateway', p99Ms: 50, attempts: 3, throttle: false });
    let runs = 0;
    const outcome = await dep
      .execute(
        () => {
          runs += 1;
          return Promise.reject(error);
        },
        { idempotent: true },
      )
      .catch((e: unknown) => e);
    expect(outcome).toBe(error);
    expect(runs).toBe(1);
    expect(dep.budget.state().extras).toBe(0);
  });
});
