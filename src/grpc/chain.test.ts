import { createServer } from 'node:http';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { currentDeadline } from '../deadline/ambient.js';
import { callWithDeadline } from '../deadline/call.js';
import { withIncomingDeadline } from '../server/node.js';
import { close, listen } from '../server/server.test-helpers.js';
import { deadlineInterceptor } from './client.js';
import { echoClient, type SayReply, say, startEcho } from './grpc.test-helpers.js';
import { withGrpcDeadline } from './server.js';
import { prazoErrorOf } from './status.js';

/**
 * One deadline end to end (SPEC D1, D2, D4, D5, D8): an HTTP request enters service A (node:http),
 * A calls service B over gRPC, B calls service C over HTTP. The header the client sends becomes A's
 * ambient deadline, then the gRPC call's native deadline, then `x-deadline-epoch-ms` again for C;
 * each hop caps it with its own maximum, and a hop with too little left is never called.
 */
interface Limits {
  aMaxMs: number;
  bMaxMs: number;
  cMaxMs: number;
  /** B's p99 for C: with less left, B does not call C. */
  cP99Ms: number;
  /** A's p99 for B. */
  bP99Ms: number;
}
interface Seen {
  aDeadlineEpoch?: number;
  bArrivalEpoch?: number;
  bDeadlineEpoch?: number;
  cArrivalEpoch?: number;
  cDeadlineEpoch?: number;
  cCalls: number;
  bCalls: number;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

async function chain(limits: Limits) {
  const seen: Seen = { cCalls: 0, bCalls: 0 };
  const c = createServer(
    withIncomingDeadline(
      (req, res) => {
        seen.cCalls += 1;
        seen.cArrivalEpoch = Date.now();
        seen.cDeadlineEpoch = req.deadline.epochMs();
        res.end('from C');
      },
      { maxMs: limits.cMaxMs, defaultMs: limits.cMaxMs },
    ),
  );
  const cUrl = await listen(c);
  stops.push(() => close(c));

  const b = await startEcho({
    say: withGrpcDeadline(
      async (_call: ServerUnaryCall<unknown, SayReply>, cb: sendUnaryData<SayReply>) => {
        seen.bCalls += 1;
        seen.bArrivalEpoch = Date.now();
        const deadline = currentDeadline()!;
        seen.bDeadlineEpoch = deadline.epochMs();
        const text = await callWithDeadline(deadline, {
          name: 'service-c',
          p99Ms: limits.cP99Ms,
          execute: async ({ signal, headers }) => (await request(cUrl, { signal, headers })).body.text(),
        });
        cb(null, { text, remainingMs: deadline.remainingMs(), deadlineEpochMs: deadline.epochMs() });
      },
      { maxMs: limits.bMaxMs, defaultMs: limits.bMaxMs },
    ),
  });
  stops.push(b.stop);

  const bClient = echoClient(b.address, { interceptors: [deadlineInterceptor({ p99Ms: limits.bP99Ms })] });
  stops.push(async () => bClient.close());
  const a = createServer(
    withIncomingDeadline(
      async (req, res) => {
        seen.aDeadlineEpoch = req.deadline.epochMs();
        try {
          const reply = await say(bClient, {});
          res.end(JSON.stringify({ text: reply.text }));
        } catch (error) {
          const cause = prazoErrorOf(error);
          res.writeHead(504, { 'content-type': 'application/json' });
          const { code, details } = error as { code?: number; details?: string };
          res.end(JSON.stringify({ grpcCode: code, details, cause: cause?.code }));
        }
      },
      { maxMs: limits.aMaxMs, defaultMs: limits.aMaxMs },
    ),
  );
  const aUrl = await listen(a);
  stops.push(() => close(a));
  return { aUrl, seen };
}

const roomy: Limits = { aMaxMs: 10_000, bMaxMs: 10_000, cMaxMs: 10_000, cP99Ms: 50, bP99Ms: 50 };

describe('HTTP → gRPC → HTTP keeps one deadline', () => {
  it('the last hop sees the first hop deadline, minus what elapsed on the way', async () => {
    const { aUrl, seen } = await chain(roomy);
    const clientDeadline = Date.now() + 2_000;
    const res = await request(aUrl, { headers: { 'x-deadline-epoch-ms': String(clientDeadline) } });
    expect(await res.body.json()).toEqual({ text: 'from C' });
    // Relative grpc-timeout and ms rounding move the instant by a few ms, never by more than that.
    expect(Math.abs(seen.aDeadlineEpoch! - clientDeadline)).toBeLessThan(5);
    // A relative header is read against its arrival: the transit of a loaded machine (a hop waiting
    // for the CPU) moves the instant later by that much, never by tens of ms.
    expect(seen.cDeadlineEpoch!).toBeLessThanOrEqual(clientDeadline + 25);
    expect(seen.cDeadlineEpoch!).toBeGreaterThan(clientDeadline - 100);
    const cRemaining = seen.cDeadlineEpoch! - seen.cArrivalEpoch!;
    expect(cRemaining).toBeLessThan(2_000);
    expect(cRemaining).toBeGreaterThan(1_500);
  });

  it('each hop caps it with its own maximum (SPEC D2)', async () => {
    const { aUrl, seen } = await chain({ ...roomy, aMaxMs: 3_000, bMaxMs: 1_200, cMaxMs: 10_000 });
    const askedFor = Date.now() + 60_000;
    const started = Date.now();
    const res = await request(aUrl, { headers: { 'x-deadline-epoch-ms': String(askedFor) } });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect(seen.aDeadlineEpoch!).toBeLessThanOrEqual(started + 3_000 + 100);
    expect(seen.bDeadlineEpoch!).toBeLessThanOrEqual(seen.bArrivalEpoch! + 1_200 + 5);
    expect(seen.bDeadlineEpoch!).toBeGreaterThan(seen.bArrivalEpoch! + 1_200 - 100);
    expect(Math.abs(seen.cDeadlineEpoch! - seen.bDeadlineEpoch!)).toBeLessThan(5);

    const cCapped = await chain({ ...roomy, cMaxMs: 400 });
    const res2 = await request(cCapped.aUrl, {
      headers: { 'x-deadline-epoch-ms': String(Date.now() + 5_000) },
    });
    await res2.body.text();
    const cRemaining = cCapped.seen.cDeadlineEpoch! - cCapped.seen.cArrivalEpoch!;
    expect(cRemaining).toBeLessThanOrEqual(400 + 5);
    expect(cRemaining).toBeGreaterThan(300);
  });

  it('when too little is left for C, C is never called and the client gets 504 (SPEC D4)', async () => {
    const { aUrl, seen } = await chain({ ...roomy, cP99Ms: 500 });
    const res = await request(aUrl, { headers: { 'x-deadline-epoch-ms': String(Date.now() + 300) } });
    expect(res.statusCode).toBe(504);
    // B refused with DEADLINE_INSUFFICIENT and said so in the status details; A's interceptor reads a
    // DEADLINE_EXCEEDED from B (B ran out of time), with the details of where it happened.
    expect(await res.body.json()).toEqual({
      grpcCode: 4,
      cause: 'DEADLINE_EXCEEDED',
      details: expect.stringMatching(
        /^prazo: deadline insufficient for service-c: \d+ ms left, needs 500 ms/,
      ),
    });
    expect(seen.bCalls).toBe(1);
    expect(seen.cCalls).toBe(0);
  });

  it('when too little is left for B, neither B nor C is called and the cause is kept (SPEC D4)', async () => {
    const { aUrl, seen } = await chain({ ...roomy, bP99Ms: 400 });
    const res = await request(aUrl, { headers: { 'grpc-timeout': '250m' } });
    expect(res.statusCode).toBe(504);
    expect(await res.body.json()).toMatchObject({ grpcCode: 4, cause: 'DEADLINE_INSUFFICIENT' });
    expect([seen.bCalls, seen.cCalls]).toEqual([0, 0]);
  });
});
