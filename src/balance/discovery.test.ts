import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { discoveryError, NoInstanceError, noAddressError } from '../errors/capacity.js';
import { createHttpClient } from '../http/client.js';
import { readOptions } from '../options/validator.js';
import { DnsDiscovery } from './discovery.js';
import { DISCOVERY_OPTIONS, INSTANCES_OPTIONS } from './options.js';

/**
 * DNS discovery (SPEC X5) against lookups that misbehave the ways resolvers do: one that never calls
 * back, one that answers long after it was given up, one that throws, one that fails. The lookup is
 * the test's, the timers the fake clock's (#24 item 4).
 */

type Callback = (error: Error | null, addresses?: LookupAddress[]) => void;

const A = [{ address: '10.0.0.1', family: 4 }];
const B = [{ address: '10.0.0.2', family: 4 }];
const C = [{ address: '10.0.0.3', family: 4 }];

/** A lookup whose calls the test answers, one by one, whenever it likes (or never). */
function scriptedLookup() {
  const calls: Callback[] = [];
  const lookup = ((_h: string, _o: unknown, callback: Callback) => {
    calls.push(callback);
  }) as never;
  return { calls, lookup };
}

function discover(lookup: unknown, extra: { intervalMs?: number; timeoutMs?: number } = {}) {
  const clock = new FakeClock();
  const answers: string[][] = [];
  const errors: Error[] = [];
  const d = new DnsDiscovery({
    hostname: 'inventory.test',
    intervalMs: extra.intervalMs ?? 100,
    ...(extra.timeoutMs === undefined ? {} : { timeoutMs: extra.timeoutMs }),
    clock,
    lookup: lookup as never,
    onAddresses: (a) => answers.push(a.map((x) => x.address)),
    onError: (e) => errors.push(e),
  });
  d.start();
  return { clock, answers, errors, d };
}

describe('DNS discovery: a lookup that never answers (SPEC X5, #24 item 4)', () => {
  it('gives a lookup up at its timeout, on the clock, and looks the name up again: discovery goes on', () => {
    let n = 0;
    const lookup = ((_h: string, _o: unknown, callback: Callback) => {
      n += 1;
      if (n === 1) return; // the first lookup never calls back
      callback(null, A);
    }) as never;
    const { clock, answers, errors, d } = discover(lookup, { intervalMs: 100, timeoutMs: 500 });
    clock.advance(1_500);
    // Before: 1 lookup in 1.5 s, no answer ever, discovery stopped for good.
    expect(n).toBe(1 + 10); // the given-up one at 0, then 600, 700, ..., 1500
    expect(answers[0]).toEqual(['10.0.0.1']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'ETIMEOUT' });
    expect(errors[0]!.message).toBe('the lookup of inventory.test did not answer within 500 ms');
    d.stop();
    expect(clock.pendingTimers()).toBe(0);
  });

  it('has a default timeout, declared with its unit and range', () => {
    expect(DISCOVERY_OPTIONS.defaults.timeoutMs).toBe(5_000);
    expect(DISCOVERY_OPTIONS.specs.timeoutMs).toMatchObject({ unit: 'ms', min: 100, max: 60_000 });
    expect(() => readOptions('t', INSTANCES_OPTIONS, { discovery: { timeoutMs: 50 } })).toThrow(
      /`discovery.timeoutMs` must be a finite number in \[100, 60000\]/,
    );
    expect(() => readOptions('t', INSTANCES_OPTIONS, { discovery: { timeout: 500 } })).toThrow(
      /did you mean `timeoutMs`\?/,
    );
    let n = 0;
    const lookup = ((_h: string, _o: unknown, callback: Callback) => {
      n += 1;
      if (n > 1) callback(null, A);
    }) as never;
    const { clock, answers } = discover(lookup, { intervalMs: 100 });
    clock.advance(4_999);
    expect(n).toBe(1);
    clock.advance(101);
    expect(n).toBe(2);
    expect(answers).toEqual([['10.0.0.1']]);
  });

  it("a late answer of a given-up lookup never replaces a newer lookup's answer", () => {
    const { calls, lookup } = scriptedLookup();
    const { clock, answers, errors } = discover(lookup, { intervalMs: 100, timeoutMs: 500 });
    clock.advance(600); // #1 given up at 500, #2 started at 600
    expect(calls).toHaveLength(2);
    calls[1]!(null, B); // the newer answers first
    calls[0]!(null, A); // then the given-up one: older, dropped
    expect(answers).toEqual([['10.0.0.2']]);
    calls[0]!(null, C); // a second callback of one lookup: ignored
    expect(answers).toEqual([['10.0.0.2']]);
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['ETIMEOUT']);
  });

  it('a late answer that is still the newest there is counts: a slow resolver is not ignored for good', () => {
    const { calls, lookup } = scriptedLookup();
    const { clock, answers } = discover(lookup, { intervalMs: 100, timeoutMs: 500 });
    clock.advance(600); // #1 given up, #2 under way
    calls[0]!(null, A); // #1 answers late, nothing newer has answered: taken
    expect(answers).toEqual([['10.0.0.1']]);
    calls[1]!(null, B); // #2, newer, answers after: taken
    expect(answers).toEqual([['10.0.0.1'], ['10.0.0.2']]);
    const late = calls.length;
    clock.advance(100);
    expect(calls.length).toBe(late + 1); // and the rounds go on
  });

  it('a late failure of a given-up lookup is not reported twice', () => {
    const { calls, lookup } = scriptedLookup();
    const { clock, errors } = discover(lookup, { intervalMs: 100, timeoutMs: 500 });
    clock.advance(500);
    calls[0]!(Object.assign(new Error('SERVFAIL'), { code: 'ESERVFAIL' }));
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['ETIMEOUT']);
  });

  it('keeps at most two lookups unanswered at once (a hung getaddrinfo holds a libuv thread), and forgets one after 60 s', () => {
    const { calls, lookup } = scriptedLookup();
    const { clock, errors, answers } = discover(lookup, { intervalMs: 100, timeoutMs: 500 });
    clock.advance(600 + 500); // #1 and #2 given up
    expect(calls).toHaveLength(2);
    clock.advance(10_000); // rounds come, none starts a third lookup while two are out
    expect(calls).toHaveLength(2);
    expect(errors.at(-1)!.message).toMatch(/^2 lookups of inventory.test are still unanswered/);
    calls[0]!(null, A); // one comes back: the next round looks again
    expect(answers).toEqual([['10.0.0.1']]);
    clock.advance(100);
    expect(calls).toHaveLength(3);
    calls[2]!(null, B);
    expect(answers).toEqual([['10.0.0.1'], ['10.0.0.2']]);
    // A lookup that never calls back at all (a custom one's bug) stops counting after 60 s.
    const { calls: hung, lookup: never } = scriptedLookup();
    const second = discover(never, { intervalMs: 100, timeoutMs: 500 });
    second.clock.advance(1_100);
    expect(hung).toHaveLength(2);
    second.clock.advance(58_000); // 59.1 s: #1, out since 0, still counts
    expect(hung).toHaveLength(2);
    second.clock.advance(1_000); // 60.1 s: it no longer does
    expect(hung).toHaveLength(3);
    second.clock.advance(1_000);
    expect(hung.length).toBeGreaterThan(2);
  });

  it('a lookup that throws is a failed lookup, reported with its error, and the rounds go on', () => {
    let n = 0;
    const lookup = ((_h: string, _o: unknown, callback: Callback) => {
      n += 1;
      if (n === 1) throw Object.assign(new Error('bad hostname'), { code: 'EINVAL' });
      callback(null, A);
    }) as never;
    const { clock, answers, errors } = discover(lookup);
    expect(errors[0]).toMatchObject({ code: 'EINVAL' });
    clock.advance(100);
    expect(answers).toEqual([['10.0.0.1']]);
  });
});

describe('NO_INSTANCE says what happened (#24 item 4)', () => {
  it('a failed lookup: the lookup failed, with its error; no address: resolves to no address', () => {
    const servfail = Object.assign(new Error('queryA ESERVFAIL inventory.test'), { code: 'ESERVFAIL' });
    const failed = new NoInstanceError({
      dependency: 'inventory',
      hostname: 'inventory.test',
      cause: servfail,
    });
    expect(failed.message).toBe(
      'no instance of inventory to call (the lookup of inventory.test failed: queryA ESERVFAIL inventory.test)',
    );
    expect(failed.cause).toBe(servfail);
    const thrown = new NoInstanceError({
      dependency: 'inventory',
      hostname: 'inventory.test',
      cause: Object.assign(new Error('bad hostname'), { code: 'EINVAL' }),
    });
    expect(thrown.message).toBe(
      'no instance of inventory to call (the lookup of inventory.test failed: EINVAL: bad hostname)',
    );
    const empty = new NoInstanceError({
      dependency: 'inventory',
      hostname: 'inventory.test',
      cause: noAddressError('inventory.test'),
    });
    expect(empty.message).toBe('no instance of inventory to call (inventory.test resolves to no address)');
    expect(new NoInstanceError({ dependency: 'inventory', hostname: 'inventory.test' }).message).toBe(
      'no instance of inventory to call (inventory.test resolves to no address)',
    );
    expect(new NoInstanceError({ dependency: 'inventory' }).message).toBe('no instance of inventory to call');
    const late = new NoInstanceError({
      dependency: 'inventory',
      hostname: 'inventory.test',
      cause: discoveryError('ETIMEOUT', 'the lookup of inventory.test did not answer within 500 ms'),
    });
    expect(late.message).toBe(
      'no instance of inventory to call (the lookup of inventory.test did not answer within 500 ms)',
    );
    const odd = new NoInstanceError({
      dependency: 'inventory',
      hostname: 'h',
      cause: `x\u001b]0;y\u0007${'z'.repeat(300)}`,
    });
    expect([...odd.message].filter((ch) => ch.charCodeAt(0) < 0x20)).toEqual([]);
    expect(odd.message).toContain('x\\x1b]0;y\\x07zzz');
    expect(odd.message.length).toBeLessThan(300);
  });
});

describe('DNS discovery through createHttpClient, real undici, the clock faked (#24 item 4)', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });

  it('a first lookup that never answers is given up; the next answer serves calls (was: every call QUEUE_TIMEOUT for good)', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    let lookups = 0;
    const lookup = ((_h: string, _o: unknown, callback: Callback) => {
      lookups += 1;
      if (lookups === 1) return; // never calls back
      setImmediate(() => callback(null, [{ address: '127.0.0.1', family: 4 }]));
    }) as never;
    const clock = new FakeClock();
    const c = createHttpClient({
      name: 'inventory',
      origin: `http://inventory.test:${port}`,
      discovery: { intervalMs: 100, lookup },
      p99Ms: 200,
      clock,
    });
    try {
      clock.advance(DISCOVERY_OPTIONS.defaults.timeoutMs + 100);
      expect(lookups).toBe(2); // before: 1, and never another
      await new Promise((r) => setImmediate(r));
      expect(c.instances().map((i) => i.instance)).toEqual([`http://127.0.0.1:${port}`]);
      const answer = await Promise.race([
        c.request('/').then((r) => r.body.text()),
        new Promise((r) => setTimeout(() => r('no answer in 5 s'), 5_000)),
      ]);
      expect(answer).toBe('ok');
    } finally {
      await c.close();
    }
  });

  it("the client's own discovery.timeoutMs bounds each lookup (not the 5 s default)", async () => {
    let lookups = 0;
    const lookup = ((_h: string, _o: unknown, _callback: Callback) => {
      lookups += 1; // never calls back
    }) as never;
    const clock = new FakeClock();
    const c = createHttpClient({
      name: 'inventory',
      origin: 'http://inventory.test:8080',
      discovery: { intervalMs: 100, timeoutMs: 200, lookup },
      p99Ms: 200,
      clock,
    });
    try {
      clock.advance(1_000);
      expect(lookups).toBeGreaterThanOrEqual(2); // given up at 200 ms: the next lookups went out
    } finally {
      await c.close();
    }
  });
});
