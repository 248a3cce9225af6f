import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { slowResolver } from './dns.js';
import {
  type FaultServer,
  headersAfter,
  neverAnswer,
  resetMidBody,
  stalledBody,
  startHttpFault,
  statusThenOk,
} from './http-faults.js';
import { RequestLog } from './log.js';
import { startBlackHole, startCrash, startRefused } from './socket-faults.js';

/**
 * The fault library is itself tested with a plain undici client and raw sockets, so that the matrix
 * can trust it: each fault does what it says, and counts what it saw.
 */

const open: FaultServer[] = [];
const agents: Agent[] = [];
const track = (f: FaultServer): FaultServer => {
  open.push(f);
  return f;
};
const agent = (): Agent => {
  const a = new Agent({ connect: { timeout: 2_000 }, headersTimeout: 2_000, bodyTimeout: 2_000 });
  agents.push(a);
  return a;
};
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  await Promise.all(open.splice(0).map((f) => f.close()));
});

const errorCode = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
    return 'no error';
  } catch (error) {
    const e = error as { code?: string; cause?: { code?: string } };
    return e.cause?.code ?? e.code ?? String(error);
  }
};

describe('fault servers', () => {
  it('refused: nothing listens, the connection is refused', async () => {
    const f = track(await startRefused());
    expect(await errorCode(request(`${f.origin}/call/1`, { dispatcher: agent() }))).toBe('ECONNREFUSED');
  });

  it('black hole: connect never completes, nothing is accepted', async () => {
    const f = track(await startBlackHole());
    const { port } = new URL(f.origin);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => {});
    const connected = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 600);
      socket.once('connect', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    socket.destroy();
    expect(connected).toBe(false);
    expect(f.log.total).toBe(0);
  });

  it('never answer: the request is read and counted, no response comes', async () => {
    const f = track(await startHttpFault('silent', neverAnswer));
    const code = await errorCode(
      request(`${f.origin}/call/1`, { method: 'POST', body: 'x', dispatcher: agent(), headersTimeout: 300 }),
    );
    expect(code).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(f.log.count('POST', '/call/1')).toBe(1);
  });

  it('headers after a delay: the head arrives no sooner than the delay', async () => {
    const f = track(await startHttpFault('slow head', headersAfter(200)));
    const t0 = performance.now();
    const res = await request(`${f.origin}/call/1`, { dispatcher: agent() });
    expect(await res.body.text()).toBe('ok\n');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(190);
  });

  it('stalled body: the head and 16 bytes arrive, then nothing', async () => {
    const f = track(await startHttpFault('stall', stalledBody));
    const res = await request(`${f.origin}/call/1`, { dispatcher: agent(), bodyTimeout: 300 });
    expect(res.statusCode).toBe(200);
    let got = 0;
    const code = await errorCode(
      (async () => {
        for await (const chunk of res.body) got += (chunk as Buffer).length;
      })(),
    );
    expect(code).toBe('UND_ERR_BODY_TIMEOUT');
    expect(got).toBe(16);
  });

  it('reset mid-body: the body is cut by a connection reset', async () => {
    const f = track(await startHttpFault('reset', resetMidBody(30)));
    const res = await request(`${f.origin}/call/1`, { dispatcher: agent() });
    expect(res.statusCode).toBe(200);
    expect(await errorCode(res.body.text())).toMatch(/ECONNRESET|UND_ERR_SOCKET/);
  });

  it('crash mid-request: the server dies after reading the head; later attempts are refused', async () => {
    const f = track(await startCrash());
    const a = agent();
    const headers = { 'idempotency-key': 'k1' };
    expect(
      await errorCode(request(`${f.origin}/call/7`, { method: 'POST', headers, dispatcher: a })),
    ).toMatch(/UND_ERR_SOCKET|ECONNRESET/);
    await f.settle?.();
    expect(f.log.all.map((r) => [r.method, r.path, r.key])).toEqual([['POST', '/call/7', 'k1']]);
    expect(await errorCode(request(`${f.origin}/call/8`, { dispatcher: a }))).toBe('ECONNREFUSED');
  });

  it('status then ok: 429 + Retry-After on the first copy of a call, 200 on the next', async () => {
    const f = track(await startHttpFault('429', statusThenOk(429, '1')));
    const a = agent();
    const first = await request(`${f.origin}/call/1`, { dispatcher: a });
    await first.body.dump();
    expect([first.statusCode, first.headers['retry-after']]).toEqual([429, '1']);
    const second = await request(`${f.origin}/call/1`, { dispatcher: a });
    await second.body.dump();
    expect(second.statusCode).toBe(200);
    const other = await request(`${f.origin}/call/2`, { dispatcher: a });
    await other.body.dump();
    expect(other.statusCode).toBe(429);
    expect(f.log.copies('/call/1')).toBe(2);
  });

  it('slow DNS: the resolver stub answers loopback only after its delay, and counts lookups', async () => {
    const dns = slowResolver(150);
    const f = track(await startHttpFault('ok', statusThenOk(200, undefined, 0)));
    const { port } = new URL(f.origin);
    const a = new Agent({ connect: { lookup: dns.lookup } });
    agents.push(a);
    const t0 = performance.now();
    const res = await request(`http://${dns.host}:${port}/call/1`, { dispatcher: a });
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(dns.lookups()).toBe(1);
    dns.close();
  });
});

describe('RequestLog', () => {
  it('counts copies per logical call and flags only unkeyed non-idempotent duplicates', () => {
    const log = new RequestLog();
    log.record('GET', '/call/1', {});
    log.record('GET', '/call/1', {});
    log.record('POST', '/call/2', { 'idempotency-key': 'a' });
    log.record('POST', '/call/2', { 'idempotency-key': 'a' });
    log.record('POST', '/call/3', {});
    expect(log.duplicateWrites()).toBe(0);
    log.record('post', '/call/3', {});
    expect(log.duplicateWrites()).toBe(1);
    expect(log.byKey().get('a')).toBe(2);
    expect(log.count('POST')).toBe(4);
    expect(log.summary()).toBe('GET:2 POST+key:2 POST:2');
  });
});
