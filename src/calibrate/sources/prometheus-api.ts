import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Clock } from '../../clock/clock.js';
import { systemClock } from '../../clock/system.js';
import { callWithDeadline } from '../../deadline/call.js';
import { Deadline } from '../../deadline/deadline.js';
import { PrazoError } from '../../errors/base.js';
import { ErrorCode } from '../../errors/codes.js';
import { isDeadlineExceeded } from '../../errors/guards.js';
import { defineOptions, type OptionsOf, option } from '../../options/declare.js';
import { readOptions } from '../../options/validator.js';
import { subscribeAbort, unsubscribeAbort } from '../../signal/shared-abort.js';
import { parsePromFloat } from './prometheus-line.js';

/**
 * A client of the Prometheus HTTP API's range queries (`/api/v1/query_range`), for fleet calibration
 * (SPEC X8): the fleet's histograms are in Prometheus, so the p99 a timeout is calibrated on comes from
 * there, summed over every pod. What it guards against is the network and the server, not PromQL:
 *
 * - each query runs inside a prazo `Deadline` (`callWithDeadline`): past `timeoutMs` the request is
 *   aborted and the query fails with `reason: 'timeout'`; Prometheus is told the same limit
 *   (`timeout=`), so it stops evaluating too;
 * - queries run at most `concurrency` at a time over a keep-alive agent of as many sockets;
 * - an answer is read up to `maxBodyBytes` and parsed strictly ({@link parseQueryRangeAnswer}): the
 *   API's envelope, a matrix, `[time, "value"]` pairs, bounded series and points. Anything else is a
 *   {@link PrometheusQueryError} naming what was wrong, never a TypeError from a missing field;
 * - a transport failure (refused, reset, unknown host, timeout) aborts every query still waiting, so
 *   a Prometheus that is down costs one timeout, not one per dependency.
 *
 * `node:http`, not undici: `prazo/calibrate` loads no HTTP client package.
 */

/** Why a query failed. `api`: Prometheus answered with `status: "error"` (a bad query, a timeout of its own). */
export type PrometheusFailure = 'unreachable' | 'timeout' | 'http' | 'api' | 'body' | 'aborted';

/** A range query that did not produce a matrix (code `PROMETHEUS_QUERY_FAILED`): one line for a human. */
export class PrometheusQueryError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.PROMETHEUS_QUERY_FAILED];
  readonly reason: PrometheusFailure;
  /** The HTTP status, when Prometheus answered one. */
  readonly status: number | undefined;
  /** The API's `errorType` (`bad_data`, `execution`, `timeout`...), when it sent one. */
  readonly errorType: string | undefined;
  constructor(
    reason: PrometheusFailure,
    message: string,
    details: { status?: number; errorType?: string; cause?: unknown } = {},
  ) {
    super(ErrorCode.PROMETHEUS_QUERY_FAILED, message, { cause: details.cause });
    this.reason = reason;
    this.status = details.status;
    this.errorType = details.errorType;
  }
}

/** Bounds of one answer: a calibration asks for a few series of at most 11,000 points each. */
export const PROMETHEUS_API_LIMITS = Object.freeze({
  /** Series in one matrix. */
  maxSeries: 10_000,
  /** Points over every series of one matrix (a calibration needs at most 11,000 × a few dozen buckets). */
  maxPoints: 2_000_000,
  /** Prometheus itself refuses a range query of more than 11,000 points per series. */
  maxStepsPerQuery: 11_000,
  /** Characters of a server's error text quoted in a message. */
  quoteChars: 200,
});

/** Control characters (C0 and DEL), which RFC 7617 keeps out of a basic-auth pair. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A basic-auth pair (`Authorization: Basic base64(user:password)`). */
export interface BasicAuth {
  readonly username: string;
  readonly password: string;
}

/** `createPrometheusClient`'s options. */
export const PROMETHEUS_CLIENT_OPTIONS = defineOptions({
  /**
   * The server's base URL, `http://` or `https://` (a path prefix such as `/prometheus` is kept).
   * Credentials in it (`https://user:pass@host`) are sent as basic auth and never printed. Required.
   */
  url: option.required(
    option.matching<string>(
      'an http:// or https:// URL of at most 2048 characters (not shown here: it may hold credentials)',
      (v) => typeof v === 'string' && v.length <= 2048 && parseBaseUrl(v) !== undefined,
    ),
  ),
  /**
   * Sent as `Authorization: Bearer <token>`. Default: none. At most 8192 visible ASCII characters: a
   * line break or a space in it (a token read from a file with its newline) made Node refuse the
   * header on every query, reported as "cannot reach Prometheus". A bad token or URL is never quoted
   * in the error (the options' usual "got ..." showed a secret's first 40 characters).
   */
  bearerToken: option.matching<string>(
    'a token of 1 to 8192 visible ASCII characters, no spaces or line breaks (not shown here: a secret)',
    (v) => typeof v === 'string' && v.length <= 8192 && /^[\x21-\x7e]+$/.test(v),
  ),
  /**
   * Sent as `Authorization: Basic ...`. Default: none (or the URL's credentials). RFC 7617: no control
   * characters, and no `:` in the username (the server splits the pair at the first one).
   */
  basicAuth: option.matching<BasicAuth>(
    '{ username, password } (strings without control characters, no `:` in the username)',
    (v) =>
      v !== null &&
      typeof v === 'object' &&
      typeof (v as BasicAuth).username === 'string' &&
      typeof (v as BasicAuth).password === 'string' &&
      !(v as BasicAuth).username.includes(':') &&
      !CONTROL.test((v as BasicAuth).username) &&
      !CONTROL.test((v as BasicAuth).password),
  ),
  /** Limit of each query, in ms, end to end (connect, evaluation, body). Default 10000; (0, 300000]. */
  timeoutMs: option.number({ default: 10_000, unit: 'ms', min: 0, exclusiveMin: true, max: 300_000 }),
  /** Queries in flight at once (and sockets kept open). Default 8; integer [1, 64]. */
  concurrency: option.integer({ default: 8, min: 1, max: 64 }),
  /** Largest answer read, in bytes; a larger one fails the query. Default 33554432 (32 MiB); integer [1024, 1073741824]. */
  maxBodyBytes: option.integer({ default: 32 * 1024 * 1024, min: 1024, max: 1024 * 1024 * 1024 }),
  /** Where time comes from. Default: the system clock. */
  clock: option.clock(),
});

export type PrometheusClientOptions = OptionsOf<typeof PROMETHEUS_CLIENT_OPTIONS>;

/** One series of a matrix: its labels (a `Map`: no prototype keys) and its `[seconds, value]` points. */
export interface MatrixSeries {
  readonly labels: ReadonlyMap<string, string>;
  /** Unix time in seconds and the value (NaN and ±Inf as Prometheus wrote them). Sorted by time. */
  readonly points: readonly (readonly [number, number])[];
}

export interface Matrix {
  readonly series: readonly MatrixSeries[];
  /** The API's `warnings`, as sent (at most 10, each cut to 200 characters). */
  readonly warnings: readonly string[];
}

/** The time range of a range query: evaluation instants start, start + step, ..., end (seconds). */
export interface QueryRange {
  readonly startS: number;
  readonly endS: number;
  readonly stepS: number;
}

export interface PrometheusClient {
  /** The base URL, without credentials: what a message may show. */
  readonly origin: string;
  queryRange(query: string, range: QueryRange): Promise<Matrix>;
  /** Closes the kept-alive sockets and fails the queries still waiting. */
  close(): void;
}

const cut = (text: string, n: number = PROMETHEUS_API_LIMITS.quoteChars): string =>
  text.length > n ? `${text.slice(0, n)}…` : text;
const oneLine = (text: string): string => cut(text.replace(/\s+/g, ' ').trim());
const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A URL's percent-encoded user or password, decoded; as written when it is not valid percent-encoding
 * (`%zz`, a cut UTF-8 sequence), which the URL parser keeps and `decodeURIComponent` throws a URIError
 * on — from inside option validation, where the user was owed an `InvalidOptionsError`.
 */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The URL without credentials, query or fragment, or undefined when it is not http(s). */
export function parseBaseUrl(
  raw: string,
): { url: URL; shown: string; auth: BasicAuth | undefined } | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.hostname === '') return undefined;
  const auth =
    url.username !== '' || url.password !== ''
      ? { username: decoded(url.username), password: decoded(url.password) }
      : undefined;
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  const shown = url.href.replace(/\/+$/, '');
  return { url, shown, auth };
}

const failBody = (what: string): never => {
  throw new PrometheusQueryError('body', `the answer is not Prometheus API JSON: ${what}`);
};

/**
 * Reads the API's envelope: `{"status":"success","data":...}` or `{"status":"error","errorType",
 * "error"}`. Throws `PrometheusQueryError` for anything else, naming what was found.
 */
function readEnvelope(status: number, text: string): { data: unknown; warnings: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const shown = text.trim() === '' ? 'an empty body' : `"${oneLine(text)}"`;
    if (status < 200 || status > 299)
      throw new PrometheusQueryError('http', `Prometheus answered HTTP ${status} with ${shown}`, { status });
    return failBody(shown);
  }
  if (!isObject(parsed)) {
    if (status < 200 || status > 299)
      throw new PrometheusQueryError('http', `Prometheus answered HTTP ${status}`, { status });
    return failBody(`a JSON ${Array.isArray(parsed) ? 'array' : typeof parsed}, not an object`);
  }
  if (parsed.status === 'error' || (status >= 400 && typeof parsed.error === 'string')) {
    const errorType = typeof parsed.errorType === 'string' ? cut(parsed.errorType, 40) : undefined;
    const error = typeof parsed.error === 'string' ? oneLine(parsed.error) : 'no error text';
    const reason = status < 200 || status > 299 ? 'http' : 'api';
    throw new PrometheusQueryError(
      reason,
      `Prometheus answered ${status !== 200 ? `HTTP ${status} ` : ''}${errorType ?? 'error'}: ${error}`,
      { status, ...(errorType === undefined ? {} : { errorType }) },
    );
  }
  if (status < 200 || status > 299)
    throw new PrometheusQueryError('http', `Prometheus answered HTTP ${status}`, { status });
  if (parsed.status !== 'success') return failBody(`status ${oneLine(JSON.stringify(parsed.status) ?? '?')}`);
  const warnings = Array.isArray(parsed.warnings)
    ? parsed.warnings
        .filter((w): w is string => typeof w === 'string')
        .slice(0, 10)
        .map((w) => oneLine(w))
    : [];
  return { data: parsed.data, warnings };
}

/** One `[time, "value"]` pair, or a problem. */
function readPoint(raw: unknown): readonly [number, number] | string {
  if (!Array.isArray(raw) || raw.length !== 2) return 'a point is not a [time, "value"] pair';
  const [t, v] = raw as [unknown, unknown];
  if (typeof t !== 'number' || !Number.isFinite(t)) return 'a point has no finite time';
  if (typeof v !== 'string') return 'a point value is not a string';
  const value = parsePromFloat(v.slice(0, 64));
  if (value === undefined || v.length > 64) return `a point value is not a number: "${cut(v, 40)}"`;
  return [t, value];
}

/**
 * Parses the answer of a range query (the HTTP status and the body's text) into a {@link Matrix}, or
 * throws `PrometheusQueryError`: not JSON, not the API's envelope, an error answer, a result that is
 * not a matrix, a series without `metric` or `values`, a point that is not `[time, "number"]`, times
 * out of order, more series or points than {@link PROMETHEUS_API_LIMITS}. Linear in the body; never
 * recursive in the answer's depth (a deep JSON value is refused at the first level it is not expected).
 */
export function parseQueryRangeAnswer(status: number, text: string): Matrix {
  const { data, warnings } = readEnvelope(status, text);
  if (!isObject(data)) return failBody('no `data` object');
  if (data.resultType !== 'matrix') {
    const got = typeof data.resultType === 'string' ? cut(data.resultType, 20) : typeof data.resultType;
    return failBody(`resultType ${got}, not matrix`);
  }
  const result = data.result;
  if (!Array.isArray(result)) return failBody('`data.result` is not a list');
  if (result.length > PROMETHEUS_API_LIMITS.maxSeries) {
    return failBody(`${result.length} series, more than ${PROMETHEUS_API_LIMITS.maxSeries}`);
  }
  let points = 0;
  const series: MatrixSeries[] = [];
  for (const raw of result as unknown[]) {
    if (!isObject(raw) || !isObject(raw.metric) || !Array.isArray(raw.values)) {
      return failBody('a series without `metric` and `values`');
    }
    const labels = new Map<string, string>();
    for (const [key, value] of Object.entries(raw.metric)) {
      if (typeof value !== 'string') return failBody(`label ${cut(key, 40)} is not a string`);
      labels.set(key, value);
    }
    points += raw.values.length;
    if (points > PROMETHEUS_API_LIMITS.maxPoints) {
      return failBody(`more than ${PROMETHEUS_API_LIMITS.maxPoints} points`);
    }
    const read: (readonly [number, number])[] = [];
    for (const p of raw.values as unknown[]) {
      const point = readPoint(p);
      if (typeof point === 'string') return failBody(point);
      const last = read[read.length - 1];
      if (last !== undefined && !(point[0] > last[0])) return failBody('points are not in time order');
      read.push(point);
    }
    series.push({ labels, points: read });
  }
  return { series, warnings };
}

/** A transport failure (refused, reset, unknown host, TLS), in one line. */
function unreachable(error: unknown, shown: string): PrometheusQueryError {
  const code = (error as { code?: unknown }).code;
  const text = error instanceof Error ? oneLine(error.message) : oneLine(String(error));
  const why = typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
  return new PrometheusQueryError('unreachable', `cannot reach Prometheus at ${shown}: ${why}`, {
    cause: error,
  });
}

/**
 * A counting semaphore: at most `n` holders; waiters are served in order. Waiters listen to the abort
 * signal through the shared fan-out (`signal/shared-abort.ts`): a calibration queues two queries per
 * dependency on one signal, and one listener each would trip Node's leak warning past ten.
 */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(n: number) {
    this.#free = n;
  }
  async take(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw signal.reason;
    if (this.#free > 0) {
      this.#free -= 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal.reason);
      };
      const grant = (): void => {
        unsubscribeAbort(signal, onAbort);
        resolve();
      };
      this.#waiting.push(grant);
      // One real listener on the client's signal however many queries wait (#24: 11 waiting queries
      // of a 10-dependency calibration tripped MaxListenersExceededWarning).
      subscribeAbort(signal, onAbort);
    });
  }
  give(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#free += 1;
  }
}

/** Creates a client; validates every option at once (`InvalidOptionsError`). Call `close()` when done. */
export function createPrometheusClient(options: PrometheusClientOptions): PrometheusClient {
  const o = readOptions('createPrometheusClient', PROMETHEUS_CLIENT_OPTIONS, options);
  const clock: Clock = o.clock ?? systemClock;
  const base = parseBaseUrl(o.url)!;
  const auth = o.basicAuth ?? base.auth;
  const authorization =
    o.bearerToken !== undefined
      ? `Bearer ${o.bearerToken}`
      : auth !== undefined
        ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`
        : undefined;
  const https = base.url.protocol === 'https:';
  const agent = https
    ? new HttpsAgent({ keepAlive: true, maxSockets: o.concurrency })
    : new HttpAgent({ keepAlive: true, maxSockets: o.concurrency });
  const send = https ? httpsRequest : httpRequest;
  const endpoint = new URL(`${base.url.pathname.replace(/\/+$/, '')}/api/v1/query_range`, base.url);
  const slots = new Slots(o.concurrency);
  const life = new AbortController();

  const post = (body: string, signal: AbortSignal): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = {
        'content-type': 'application/x-www-form-urlencoded',
        'content-length': Buffer.byteLength(body),
        accept: 'application/json',
      };
      if (authorization !== undefined) headers.authorization = authorization;
      const req = send(endpoint, { method: 'POST', agent, headers, signal }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > o.maxBodyBytes) {
            reject(
              new PrometheusQueryError('body', `the answer is larger than ${o.maxBodyBytes} bytes`, {
                status: res.statusCode,
              }),
            );
            req.destroy(); // stop reading: the socket goes, the rest is never buffered
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
        res.on('aborted', () => reject(new PrometheusQueryError('body', 'the answer was cut short')));
      });
      req.on('error', reject);
      req.end(body);
    });

  const queryRange = async (query: string, range: QueryRange): Promise<Matrix> => {
    const steps = Math.floor((range.endS - range.startS) / range.stepS) + 1;
    if (
      !(Number.isFinite(range.startS) && Number.isFinite(range.endS) && Number.isFinite(range.stepS)) ||
      !(range.stepS > 0) ||
      !(range.endS >= range.startS)
    ) {
      // Said in words: the steps of a NaN or reversed range are NaN or negative ("a range of NaN steps").
      throw new PrometheusQueryError(
        'api',
        `not a range Prometheus answers: start ${range.startS} s, end ${range.endS} s, step ${range.stepS} s (finite, step > 0, end ≥ start)`,
      );
    }
    if (steps > PROMETHEUS_API_LIMITS.maxStepsPerQuery) {
      throw new PrometheusQueryError(
        'api',
        `a range of ${steps} steps: Prometheus answers at most ${PROMETHEUS_API_LIMITS.maxStepsPerQuery}`,
      );
    }
    await slots.take(life.signal).catch(() => {
      throw new PrometheusQueryError('aborted', 'not sent: an earlier query could not reach Prometheus');
    });
    try {
      const form = new URLSearchParams({
        query,
        start: String(range.startS),
        end: String(range.endS),
        step: String(range.stepS),
        timeout: `${Math.max(1, Math.floor(o.timeoutMs))}ms`,
      });
      const answer = await callWithDeadline(Deadline.after(o.timeoutMs, { clock }), {
        name: 'prometheus',
        p99Ms: 0,
        signal: life.signal,
        execute: ({ signal }) => post(form.toString(), signal),
      }).catch((error: unknown) => {
        if (life.signal.aborted && error === life.signal.reason) {
          throw new PrometheusQueryError('aborted', 'cancelled: an earlier query could not reach Prometheus');
        }
        if (error instanceof PrometheusQueryError) throw error;
        const failure = isDeadlineExceeded(error)
          ? new PrometheusQueryError(
              'timeout',
              `Prometheus at ${base.shown} did not answer within ${o.timeoutMs} ms`,
            )
          : unreachable(error, base.shown);
        life.abort(failure); // the server is down or drowning: the queries still waiting would fail alike
        throw failure;
      });
      return parseQueryRangeAnswer(answer.status, answer.text);
    } finally {
      slots.give();
    }
  };

  return {
    origin: base.shown,
    queryRange,
    close() {
      life.abort(new PrometheusQueryError('aborted', 'the client was closed'));
      agent.destroy();
    },
  };
}
