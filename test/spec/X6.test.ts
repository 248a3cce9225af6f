import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { DependencyEvent } from '../../src/dependency/types.js';
import { DependencyFailedError } from '../../src/errors/dependency.js';
import { createHttpClient, type HttpClient } from '../../src/http/client.js';
import { deadlineErrorHandler, deadlineMiddleware } from '../../src/server/express.js';
import { fastifyDeadline } from '../../src/server/fastify.js';
import { withIncomingDeadline } from '../../src/server/node.js';
import { closingAfterEach } from './loopback.test-helpers.js';

/**
 * SPEC X6, retry at one layer, on a chain of three real loopback services:
 *
 *   user ──▶ front (prazo/server + createHttpClient, 3 attempts, a budget that would allow them all)
 *              ──▶ middle (node:http, Express 5 or Fastify 5 + createHttpClient, 3 attempts, 10% budget)
 *                    ──▶ deep: down (connections refused, or every answer a 503)
 *
 * The middle retries its dependency within its own budget; its answer pushes back (503 +
 * `grpc-retry-pushback-ms: -1`), so the front does not retry it: the middle receives exactly one
 * request per user request. Without the pushback (`pushback: false` on the middle) the front's
 * retries reach it three times per user request: the test can fail.
 */

const N = 40; // user requests
const SPACING_MS = 5;
const MIDDLE_BUDGET = { windowMs: 10_000, maxRatio: 0.1, minPerSecond: 0.3 }; // floor: 3 per window

type Framework = 'node' | 'express' | 'fastify';

const { closers, listen } = closingAfterEach();

/** A port nothing listens on: connections to it are refused. */
async function refusedOrigin(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** A dependency that is up but failing: every answer a 503 (no pushback: it is the failure itself). */
async function failingOrigin(): Promise<{ origin: string; seen: () => number }> {
  let seen = 0;
  const origin = await listen(
    createServer((_req, res) => {
      seen += 1;
      res.writeHead(503);
      res.end('down');
    }),
  );
  return { origin, seen: () => seen };
}

/** What a service's handler does: one call to its dependency; a failure is let through (thrown). */
function handlerOf(client: HttpClient) {
  return async (req: IncomingMessage & { prazoSignal?: AbortSignal }, res: ServerResponse) => {
    const answer = await client.request('/', { signal: req.prazoSignal });
    if (answer.statusCode >= 500) {
      await answer.body.dump();
      throw new DependencyFailedError({ dependency: client.name, httpStatus: answer.statusCode });
    }
    res.end(await answer.body.text());
  };
}

function client(
  name: string,
  origin: string,
  p99Ms: number,
  budget: object,
): { http: HttpClient; attempts: () => number } {
  // The retry arithmetic of X6 alone: the adaptive throttle (issue 23, on by default) would refuse
  // most calls to a dependency that fails them all, and the counts below are the budget's.
  const http = createHttpClient({ name, origin, p99Ms, attempts: 3, retryBudget: budget, throttle: false });
  let attempts = 0;
  http.on((e: DependencyEvent) => {
    if (e.type === 'attempt') attempts += 1;
  });
  closers.push(() => http.destroy());
  return { http, attempts: () => attempts };
}

async function startMiddle(framework: Framework, deep: string, pushback: boolean) {
  const downstream = client('deep', deep, 50, MIDDLE_BUDGET);
  const handle = handlerOf(downstream.http);
  let received = 0;
  const options = { defaultMs: 1_500, maxMs: 3_000, pushback };
  let origin: string;
  if (framework === 'fastify') {
    const app: FastifyInstance = Fastify();
    await app.register(fastifyDeadline, options);
    app.get('/', async (req, reply) => {
      received += 1;
      await handle(req.raw as never, reply.raw);
      return reply.hijack();
    });
    origin = await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
  } else if (framework === 'express') {
    const app = express();
    app.use(deadlineMiddleware(options));
    app.get('/', async (req, res) => {
      received += 1;
      await handle(req, res);
    });
    app.use(deadlineErrorHandler());
    origin = await listen(createServer(app));
  } else {
    origin = await listen(
      createServer(
        withIncomingDeadline(async (req, res) => {
          received += 1;
          await handle(req, res);
        }, options),
      ),
    );
  }
  return { origin, received: () => received, downstream };
}

async function startFront(middle: string) {
  // A budget that would pay every retry: only the pushback can stop them.
  const downstream = client('middle', middle, 300, { minPerSecond: 1_000 });
  const origin = await listen(
    createServer(withIncomingDeadline(handlerOf(downstream.http), { defaultMs: 1_800 })),
  );
  return { origin, downstream };
}

async function users(front: string): Promise<{ status: number; pushback: unknown; retryAfter: unknown }[]> {
  const out: Promise<{ status: number; pushback: unknown; retryAfter: unknown }>[] = [];
  for (let i = 0; i < N; i += 1) {
    out.push(
      request(front).then(async (res) => {
        await res.body.dump();
        return {
          status: res.statusCode,
          pushback: res.headers['grpc-retry-pushback-ms'],
          retryAfter: res.headers['retry-after'],
        };
      }),
    );
    await new Promise((r) => setTimeout(r, SPACING_MS));
  }
  return Promise.all(out);
}

describe.each(['node', 'express', 'fastify'] as const)(
  'SPEC X6: three hops, the deepest down, middle on %s',
  (framework) => {
    it('refused connections: the middle gets each user request once, and retries within its budget', async () => {
      const middle = await startMiddle(framework, await refusedOrigin(), true);
      const front = await startFront(middle.origin);
      const answers = await users(front.origin);
      expect(middle.received()).toBe(N); // exactly once per user request
      expect(front.downstream.attempts()).toBe(N);
      // The middle's own retries: at least one (it did retry), at most its budget (10%, floor 3).
      const extras = middle.downstream.attempts() - N;
      expect(extras).toBeGreaterThanOrEqual(1);
      expect(extras).toBeLessThanOrEqual(Math.max(3, Math.floor(0.1 * N)));
      // The user (no prazo) gets the 503, told not to retry, and a Retry-After.
      for (const a of answers) {
        expect(a.status).toBe(503);
        expect(a.pushback).toBe('-1');
        expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
      }
    });

    it('a dependency answering 503: the same, counted at the dependency itself', async () => {
      const deep = await failingOrigin();
      const middle = await startMiddle(framework, deep.origin, true);
      const front = await startFront(middle.origin);
      await users(front.origin);
      expect(middle.received()).toBe(N);
      expect(deep.seen() - N).toBeGreaterThanOrEqual(1);
      expect(deep.seen() - N).toBeLessThanOrEqual(Math.max(3, Math.floor(0.1 * N)));
    });

    it('without the pushback the front retries: 3 requests per user request reach the middle', async () => {
      const middle = await startMiddle(framework, await refusedOrigin(), false);
      const front = await startFront(middle.origin);
      await users(front.origin);
      expect(middle.received()).toBe(3 * N);
    });
  },
);
