import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../clock/system.js';
import { isPrazoError } from '../../errors/base.js';
import {
  createPrometheusClient,
  type Matrix,
  PROMETHEUS_API_LIMITS,
  PrometheusQueryError,
  parseBaseUrl,
  parseQueryRangeAnswer,
} from './prometheus-api.js';

/**
 * The Prometheus HTTP API client (SPEC X8): the answer parser as a property (whatever the body, a
 * matrix or a `PrometheusQueryError`, never another exception), hostile answers (huge, deep, wrong
 * types), and the transport on loopback (timeout, refused, bounded concurrency, credentials).
 */

const matrix = (result: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ status: 'success', data: { resultType: 'matrix', result }, ...extra });

/** What parseQueryRangeAnswer throws, or undefined when it parses. */
function failure(status: number, body: string): PrometheusQueryError | undefined {
  try {
    parseQueryRangeAnswer(status, body);
    return undefined;
  } catch (error) {
    if (error instanceof PrometheusQueryError) return error;
    throw error;
  }
}

const promFloat = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => ({ text: String(d), value: d })),
  fc.constantFrom(
    { text: 'NaN', value: Number.NaN },
    { text: '+Inf', value: Number.POSITIVE_INFINITY },
    { text: '-Inf', value: Number.NEGATIVE_INFINITY },
  ),
);

const series = fc.record({
  labels: fc.dictionary(fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,10}$/), fc.string({ maxLength: 20 }), {
    maxKeys: 4,
  }),
  start: fc.integer({ min: 0, max: 2e9 }),
  values: fc.array(promFloat, { maxLength: 20 }),
});

describe('parseQueryRangeAnswer', () => {
  it('property: a well-formed matrix reads back as itself (labels, times, NaN and ±Inf values)', () => {
    fc.assert(
      fc.property(fc.array(series, { maxLength: 6 }), (all) => {
        const result = all.map((s) => ({
          metric: s.labels,
          values: s.values.map((v, i) => [s.start + i * 15.5, v.text]),
        }));
        const m = parseQueryRangeAnswer(200, matrix(result));
        expect(m.series).toHaveLength(all.length);
        m.series.forEach((got, i) => {
          const want = all[i]!;
          expect(Object.fromEntries(got.labels)).toEqual(want.labels);
          expect(got.points.map(([t]) => t)).toEqual(want.values.map((_, j) => want.start + j * 15.5));
          expect(got.points.map(([, v]) => v)).toEqual(want.values.map((v) => v.value));
        });
      }),
    );
  });

  it('property: any JSON value or text is a matrix or a PrometheusQueryError, never another exception', () => {
    const body = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.jsonValue().map((v) => JSON.stringify({ status: 'success', data: v })),
      fc.jsonValue().map((v) => matrix(v)),
      fc.jsonValue().map((v) => matrix([{ metric: {}, values: v }])),
      fc.jsonValue().map((v) => matrix([{ metric: v, values: [] }])),
      fc.jsonValue().map((v) => matrix([{ metric: {}, values: [v] }])),
      fc.jsonValue().map((v) => JSON.stringify({ status: 'error', errorType: v, error: v })),
      fc.string({ maxLength: 200 }),
    );
    fc.assert(
      fc.property(fc.constantFrom(200, 204, 400, 422, 500, 503), body, (status, text) => {
        let m: Matrix | undefined;
        try {
          m = parseQueryRangeAnswer(status, text);
        } catch (error) {
          expect(error).toBeInstanceOf(PrometheusQueryError);
          const e = error as PrometheusQueryError;
          expect(e.code).toBe('PROMETHEUS_QUERY_FAILED');
          expect(isPrazoError(e)).toBe(true);
          expect(e.message).not.toMatch(/\n/); // one line
          expect(e.message.length).toBeLessThan(400);
          return;
        }
        expect(status).toBeGreaterThanOrEqual(200);
        expect(status).toBeLessThan(300);
        for (const s of m.series) for (const [t] of s.points) expect(Number.isFinite(t)).toBe(true);
      }),
    );
  });

  it('names what is wrong with a body of the wrong shape', () => {
    const cases: Array<[string, RegExp]> = [
      ['<html>502 Bad Gateway</html>', /not Prometheus API JSON: "<html>502/],
      ['', /an empty body/],
      ['[1,2]', /a JSON array, not an object/],
      [
        JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [] } }),
        /resultType vector, not matrix/,
      ],
      [JSON.stringify({ status: 'success' }), /no `data` object/],
      [JSON.stringify({ status: 'ok', data: {} }), /status "ok"/],
      [matrix({}), /`data.result` is not a list/],
      [matrix([{ metric: {} }]), /a series without `metric` and `values`/],
      [matrix([{ metric: { le: 1 }, values: [] }]), /label le is not a string/],
      [matrix([{ metric: {}, values: [[1, 2]] }]), /a point value is not a string/],
      [matrix([{ metric: {}, values: [['1', '2']] }]), /a point has no finite time/],
      [matrix([{ metric: {}, values: [[1]] }]), /not a \[time, "value"\] pair/],
      [matrix([{ metric: {}, values: [[1, 'one']] }]), /a point value is not a number: "one"/],
      [
        matrix([
          {
            metric: {},
            values: [
              [2, '1'],
              [1, '1'],
            ],
          },
        ]),
        /not in time order/,
      ],
    ];
    for (const [body, message] of cases) {
      const e = failure(200, body);
      expect(e?.reason, body).toBe('body');
      expect(e?.message, body).toMatch(message);
    }
  });

  it('reads the API error envelope: errorType and error text, HTTP status kept', () => {
    const bad = failure(
      400,
      JSON.stringify({ status: 'error', errorType: 'bad_data', error: '1:5: parse error: unexpected "}"' }),
    );
    expect(bad).toMatchObject({ reason: 'http', status: 400, errorType: 'bad_data' });
    expect(bad!.message).toBe('Prometheus answered HTTP 400 bad_data: 1:5: parse error: unexpected "}"');
    const execution = failure(200, JSON.stringify({ status: 'error', errorType: 'execution', error: 'x' }));
    expect(execution).toMatchObject({ reason: 'api', errorType: 'execution' });
    expect(failure(503, 'Service Unavailable')!.message).toBe(
      'Prometheus answered HTTP 503 with "Service Unavailable"',
    );
    expect(failure(401, '')).toMatchObject({ reason: 'http', status: 401 });
    // A success envelope behind an error status is still an error.
    expect(failure(500, matrix([]))).toMatchObject({ reason: 'http', status: 500 });
    expect(parseQueryRangeAnswer(200, matrix([], { warnings: ['w1', 3] })).warnings).toEqual(['w1']);
  });

  it('refuses hostile sizes at a bounded cost: series, points, deep JSON, long values', () => {
    const many = matrix(
      Array.from({ length: PROMETHEUS_API_LIMITS.maxSeries + 1 }, () => ({ metric: {}, values: [] })),
    );
    expect(failure(200, many)?.message).toMatch(/series, more than/);
    const values = Array.from({ length: 1_000_001 }, (_, i) => [i, '1']);
    const points = matrix(Array.from({ length: 2 }, () => ({ metric: {}, values })));
    const started = systemClock.now();
    expect(failure(200, points)?.message).toMatch(/more than 2000000 points/);
    expect(systemClock.now() - started).toBeLessThan(20_000);
    const deep = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[${'['.repeat(200_000)}${']'.repeat(200_000)}]}]}}`;
    expect(failure(200, deep)?.message).toMatch(/not a \[time, "value"\] pair/);
    const deepLabel = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":${'['.repeat(200_000)}${']'.repeat(200_000)}},"values":[]}]}}`;
    expect(failure(200, deepLabel)?.message).toMatch(/label a is not a string/);
    expect(failure(200, matrix([{ metric: {}, values: [[1, '1'.repeat(10_000)]] }]))?.message).toMatch(
      /not a number: "1111/,
    );
    const longError = JSON.stringify({
      status: 'error',
      errorType: 'x'.repeat(1000),
      error: 'y'.repeat(100_000),
    });
    expect(failure(400, longError)!.message.length).toBeLessThan(300);
  });

  it('keeps labels in a Map: no prototype keys from an answer', () => {
    const m = parseQueryRangeAnswer(
      200,
      matrix([{ metric: { __proto__: 'x', constructor: 'y' }, values: [] }]),
    );
    expect(m.series[0]!.labels.get('constructor')).toBe('y');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('parseBaseUrl', () => {
  it('takes credentials out of the URL it shows and keeps a path prefix', () => {
    const b = parseBaseUrl('https://ops:s3cr%40t@prom.example:9090/prometheus/?x=1#y')!;
    expect(b.shown).toBe('https://prom.example:9090/prometheus');
    expect(b.auth).toEqual({ username: 'ops', password: 's3cr@t' });
    expect(parseBaseUrl('ftp://x')).toBeUndefined();
    expect(parseBaseUrl('localhost:9090')).toBeUndefined();
    expect(parseBaseUrl('not a url')).toBeUndefined();
  });
});

// --------------------------------------------------------------------------------------------------
// The transport, on loopback.

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => void,
): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => handler(req, res, body));
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const range = { startS: 1000, endS: 1060, stepS: 30 };

async function rejection(p: Promise<unknown>): Promise<PrometheusQueryError> {
  try {
    await p;
  } catch (error) {
    if (error instanceof PrometheusQueryError) return error;
    throw error;
  }
  throw new Error('resolved');
}

describe('createPrometheusClient', () => {
  it('POSTs the query, the range and its own limit as timeout=, with the credentials asked for', async () => {
    const seen: { auth?: string; form: URLSearchParams; path?: string }[] = [];
    const url = await serve((req, res, body) => {
      seen.push({ auth: req.headers.authorization, form: new URLSearchParams(body), path: req.url });
      res.setHeader('content-type', 'application/json');
      res.end(matrix([{ metric: { le: '+Inf' }, values: [[1000, '3']] }]));
    });
    const bearer = createPrometheusClient({ url: `${url}/prefix/`, bearerToken: 't0k', timeoutMs: 5_000 });
    const m = await bearer.queryRange('sum(x)', range);
    bearer.close();
    expect(m.series[0]!.points).toEqual([[1000, 3]]);
    expect(seen[0]!.path).toBe('/prefix/api/v1/query_range');
    expect(seen[0]!.auth).toBe('Bearer t0k');
    expect(Object.fromEntries(seen[0]!.form)).toEqual({
      query: 'sum(x)',
      start: '1000',
      end: '1060',
      step: '30',
      timeout: '5000ms',
    });
    const basic = createPrometheusClient({ url: url.replace('//', '//me:p%3Ass@') });
    await basic.queryRange('up', range);
    basic.close();
    expect(seen[1]!.auth).toBe(`Basic ${Buffer.from('me:p:ss').toString('base64')}`);
    expect(basic.origin).toBe(url);
  });

  it('a server that does not answer: a timeout at timeoutMs, and the queries still waiting are not sent', async () => {
    let requests = 0;
    const url = await serve(() => {
      requests += 1; // never answers
    });
    const client = createPrometheusClient({ url, timeoutMs: 300, concurrency: 2 });
    const started = systemClock.now();
    const all = await Promise.all(
      Array.from({ length: 10 }, () => rejection(client.queryRange('up', range))),
    );
    const elapsed = systemClock.now() - started;
    client.close();
    expect(all.filter((e) => e.reason === 'timeout').length).toBeGreaterThanOrEqual(1);
    expect(all.filter((e) => e.reason === 'timeout')[0]!.message).toBe(
      `Prometheus at ${url} did not answer within 300 ms`,
    );
    expect(all.every((e) => e.reason === 'timeout' || e.reason === 'aborted')).toBe(true);
    expect(requests).toBeLessThanOrEqual(2); // the 8 waiting were never sent
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(10_000);
  });

  it('a refused port is unreachable, in one line naming the server', async () => {
    const url = await serve(() => {});
    const port = new URL(url).port;
    for (const s of servers.splice(0)) s.close();
    const client = createPrometheusClient({ url });
    const e = await rejection(client.queryRange('up', range));
    client.close();
    expect(e.reason).toBe('unreachable');
    expect(e.message).toMatch(
      new RegExp(`^cannot reach Prometheus at http://127.0.0.1:${port}: .*ECONNREFUSED`),
    );
  });

  it('stops reading an answer past maxBodyBytes', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let written = 0;
    const url = await serve((_req, res) => {
      const write = (): void => {
        while (written < 512 && res.write(chunk)) written += 1;
        if (written < 512 && !res.destroyed) res.once('drain', write);
        else res.end();
      };
      write();
    });
    const client = createPrometheusClient({ url, maxBodyBytes: 4 * 1024 * 1024 });
    const e = await rejection(client.queryRange('up', range));
    client.close();
    expect(e).toMatchObject({ reason: 'body', message: 'the answer is larger than 4194304 bytes' });
    expect(written).toBeLessThan(512);
  });

  it('runs at most `concurrency` queries at once', async () => {
    let inFlight = 0;
    let most = 0;
    const url = await serve((_req, res) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      systemClock.setTimer(() => {
        inFlight -= 1;
        res.end(matrix([]));
      }, 20);
    });
    const client = createPrometheusClient({ url, concurrency: 3 });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.name);
    };
    process.on('warning', onWarning);
    await Promise.all(Array.from({ length: 30 }, () => client.queryRange('up', range)));
    await new Promise((resolve) => setImmediate(resolve)); // a process warning is emitted on the next tick
    process.off('warning', onWarning);
    client.close();
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2);
    // #24 item 6: the 27 queries waiting for a slot share one listener on the client's abort signal.
    expect(warnings).toEqual([]);
  });

  it('refuses a range Prometheus would refuse (more than 11,000 points) before sending it', async () => {
    const client = createPrometheusClient({ url: 'http://127.0.0.1:1' });
    const e = await rejection(client.queryRange('up', { startS: 0, endS: 11_000, stepS: 1 }));
    client.close();
    expect(e.message).toMatch(/11001 steps/);
  });
});
