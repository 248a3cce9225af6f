import { connect } from 'node:http2';
import {
  Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentDeadline } from '../deadline/ambient.js';
import { DeadlineInsufficientError } from '../errors/deadline.js';
import { isDeadlineExceeded, isInvalidOptions } from '../errors/guards.js';
import { echoClient, type SayReply, say, startEcho } from './grpc.test-helpers.js';
import { type WithDeadline, withGrpcDeadline } from './server.js';

type Req = { text: string; delayMs: number; count: number };
type Call = WithDeadline<ServerUnaryCall<Req, SayReply>>;
type Reply = sendUnaryData<SayReply>;

const seen = { calls: 0, remaining: [] as number[], signalReason: undefined as unknown, signalAfterMs: 0 };
const report = (): SayReply => {
  const d = currentDeadline();
  return { text: 'ok', remainingMs: d ? d.remainingMs() : -1, deadlineEpochMs: d ? d.epochMs() : 0 };
};

let echo: Awaited<ReturnType<typeof startEcho>>;
beforeAll(async () => {
  const options = { defaultMs: 700, maxMs: 1_500 };
  echo = await startEcho({
    say: withGrpcDeadline(async (call: Call, cb: Reply) => {
      seen.calls += 1;
      seen.remaining.push(call.deadline.remainingMs());
      if (call.request.text === 'insufficient') {
        throw new DeadlineInsufficientError({ dependency: 'db', remainingMs: 3, neededMs: 40 });
      }
      if (call.request.text === 'wait-cancel') {
        await new Promise((r) => call.prazoSignal.addEventListener('abort', r, { once: true }));
        seen.signalReason = call.prazoSignal.reason;
        return;
      }
      if (call.request.text === 'wait-signal') {
        const started = performance.now();
        await new Promise((r) => call.prazoSignal.addEventListener('abort', r, { once: true }));
        seen.signalReason = call.prazoSignal.reason;
        seen.signalAfterMs = performance.now() - started;
      }
      await new Promise((r) => setTimeout(r, call.request.delayMs));
      cb(null, { ...report(), text: call.deadline === currentDeadline() ? 'same' : 'different' });
    }, options),
    count: withGrpcDeadline((call: WithDeadline<ServerWritableStream<Req, SayReply>>) => {
      if (call.request.text === 'fail') {
        call.emit('error', new DeadlineInsufficientError({ dependency: 'x', remainingMs: 1, neededMs: 9 }));
        return;
      }
      for (let i = 0; i < call.request.count; i += 1) call.write(report());
      call.end();
    }, options),
  });
});
afterAll(() => echo.stop());

describe('withGrpcDeadline (real grpc-js server on 127.0.0.1)', () => {
  it('runs the handler inside the call deadline, capped by maxMs, default without one (SPEC D2, D3)', async () => {
    const c = echoClient(echo.address);
    const within = await say(c, {}, { deadline: Date.now() + 1_000 });
    expect(within.text).toBe('same');
    expect(within.remainingMs).toBeGreaterThan(700);
    expect(within.remainingMs).toBeLessThanOrEqual(1_000);
    const capped = await say(c, {}, { deadline: Date.now() + 60_000 });
    expect(capped.remainingMs).toBeGreaterThan(1_200);
    expect(capped.remainingMs).toBeLessThanOrEqual(1_500);
    const none = await say(c, {});
    expect(none.remainingMs).toBeGreaterThan(400);
    expect(none.remainingMs).toBeLessThanOrEqual(700);
    c.close();
  });

  it('reads x-deadline-epoch-ms metadata; a malformed one gets the default, never a crash (SPEC D3, D8)', async () => {
    const c = echoClient(echo.address);
    const ask = (value: string) => {
      const md = new Metadata();
      md.set('x-deadline-epoch-ms', value);
      return new Promise<SayReply>((resolve, reject) =>
        (c as unknown as { say: (...args: unknown[]) => void }).say({}, md, (e: Error | null, r: SayReply) =>
          e ? reject(e) : resolve(r),
        ),
      );
    };
    const honoured = await ask(String(Date.now() + 300));
    expect(honoured.remainingMs).toBeLessThanOrEqual(300);
    expect(honoured.remainingMs).toBeGreaterThan(100);
    for (const junk of ['soon', '-1', '1e99', '', '9'.repeat(40)]) {
      const r = await ask(junk);
      expect(r.remainingMs, junk).toBeGreaterThan(400);
      expect(r.remainingMs, junk).toBeLessThanOrEqual(700);
    }
    const before = seen.calls;
    const expired = await ask(String(Date.now() - 10)).catch((e: unknown) => e);
    expect(expired).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect(seen.calls).toBe(before);
    c.close();
  });

  it('answers DEADLINE_EXCEEDED (not UNKNOWN) when the handler fails with a deadline error', async () => {
    const c = echoClient(echo.address);
    const error = await say(c, { text: 'insufficient' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect((error as { details: string }).details).toMatch(/^prazo: deadline insufficient for db/);
    const stream = c.count({ text: 'fail' });
    const streamError = await new Promise((resolve) => stream.on('error', resolve));
    expect(streamError).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    const md = new Metadata();
    md.set('x-deadline-epoch-ms', String(Date.now() - 1));
    const expiredStream = (
      c as unknown as { count: (r: object, m: Metadata) => NodeJS.ReadableStream }
    ).count({ count: 3 }, md);
    const expiredError = await new Promise((resolve) => expiredStream.on('error', resolve));
    expect(expiredError).toMatchObject({ code: status.DEADLINE_EXCEEDED });
    c.close();
  });

  it('fires call.prazoSignal at the local cap even when the caller allows more (SPEC D2, D7)', async () => {
    const c = echoClient(echo.address);
    const reply = await say(c, { text: 'wait-signal' }, { deadline: Date.now() + 10_000 });
    expect(isDeadlineExceeded(seen.signalReason)).toBe(true);
    expect(seen.signalAfterMs).toBeGreaterThan(1_300);
    expect(seen.signalAfterMs).toBeLessThan(2_500);
    // Read by the handler once the signal fired: nothing left, give or take a timer's granularity.
    expect(reply.remainingMs).toBeLessThan(5);
    c.close();
  });

  it('validates its options together, under its own name', () => {
    let caught: unknown;
    try {
      withGrpcDeadline(() => undefined, { defaultMs: 5_000, maxMs: 100, clock: {} as never });
    } catch (error) {
      caught = error;
    }
    expect(isInvalidOptions(caught)).toBe(true);
    expect((caught as Error).message).toContain('withGrpcDeadline');
    expect((caught as { problems: string[] }).problems).toHaveLength(2);
  });

  it('fires call.prazoSignal when the client cancels the call (SPEC D7)', async () => {
    const c = echoClient(echo.address);
    seen.signalReason = undefined;
    const before = seen.calls;
    const call = (c as unknown as { say: (r: object, cb: () => void) => { cancel(): void } }).say(
      { text: 'wait-cancel' },
      () => undefined,
    );
    while (seen.calls === before) await new Promise((r) => setTimeout(r, 5));
    call.cancel();
    for (let i = 0; i < 200 && seen.signalReason === undefined; i += 1)
      await new Promise((r) => setTimeout(r, 5));
    expect(seen.signalReason).toMatchObject({ name: 'AbortError' });
    c.close();
  });

  it('streams inside the deadline too', async () => {
    const c = echoClient(echo.address);
    const replies: SayReply[] = [];
    const stream = c.count({ count: 3 }, { deadline: Date.now() + 900 });
    for await (const r of stream) replies.push(r as unknown as SayReply);
    expect(replies).toHaveLength(3);
    for (const r of replies) expect(r.remainingMs).toBeLessThanOrEqual(900);
    c.close();
  });

  it('a malformed raw grpc-timeout header never crashes the server (SPEC D3)', async () => {
    const results: Array<{ value: string; status: string | undefined; remaining?: number }> = [];
    const session = connect(`http://${echo.address}`);
    seen.remaining.length = 0;
    for (const value of ['garbage', '5Q', '', '-3S', '999999999m', '99999999H', '1.5S', ' 20m ']) {
      const req = session.request({
        ':method': 'POST',
        ':path': '/prazo.test.Echo/Say',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': value,
      });
      req.end(Buffer.from([0, 0, 0, 0, 0]));
      const trailers = await new Promise<Record<string, unknown>>((resolve) => {
        let head: Record<string, unknown> = {};
        req.on('response', (h) => {
          head = h;
        });
        req.on('trailers', (t) => resolve(t));
        req.on('close', () => resolve(head));
        req.resume();
      });
      results.push({
        value,
        status: trailers['grpc-status'] as string | undefined,
        remaining: seen.remaining.pop(),
      });
    }
    session.close();
    // grpc-js itself answers INTERNAL to a grpc-timeout its (unanchored) pattern cannot read, and
    // reads what it can of the rest; whatever reaches the handler is within (0, maxMs].
    for (const r of results) {
      expect(['0', '13'], r.value).toContain(r.status);
      if (r.status === '0') {
        expect(r.remaining, r.value).toBeGreaterThan(0);
        expect(r.remaining, r.value).toBeLessThanOrEqual(1_500);
      }
    }
    expect(results.filter((r) => r.status === '13').map((r) => r.value)).toEqual(['garbage', '5Q', '']);
    const c = echoClient(echo.address);
    expect((await say(c, {})).text).toBe('same');
    c.close();
  });
});
