import { fileURLToPath } from 'node:url';
import { runChild, startChild } from '../lib/child.mjs';
import { goal, ratio, rotate, round, summarize } from '../lib/stats.mjs';
import { HTTP_PAIRS, HTTP_VARIANTS } from './variants.mjs';

/**
 * The hot-path suite: each variant in its own process against one shared loopback server, in rounds
 * whose order rotates (so no variant always runs first, on a cold server, or last, on a hot machine).
 * Ratios are taken within a round (variant ÷ bare undici of the same round) and then summarised, so a
 * neighbour's burst of load shifts both sides of a ratio instead of one.
 */
const LOAD = fileURLToPath(new URL('./load.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.mjs', import.meta.url));

/** Goal of SPEC/issue 9: prazo request() keeps at least this share of bare undici's throughput. */
export const REQUEST_GOAL = 0.9;
/**
 * Goals of issue 13, like for like (each a ratio within a round, see HTTP_PAIRS): prazo request(),
 * the interceptor under undici.request and the interceptor under global fetch each keep at least this
 * share of the req/s of the same call without prazo...
 */
export const LIKE_FOR_LIKE_GOAL = 0.95;
/**
 * ...and prazo request(), like the interceptor under undici.request, spends at most this multiple of
 * its bare twin's client CPU per request (issue 25).
 */
export const REQUEST_CPU_GOAL = 1.1;
/** Goal of issue 25: the executor around undici.request spends at most this multiple of its CPU. */
export const EXECUTE_CPU_GOAL = 1.15;
const BASELINE = 'undici';
const METRICS = ['reqPerSec', 'p50Ms', 'p99Ms', 'cpuUsPerReq'];

export async function runHttpSuite({ runs, warmupMs, durationMs, concurrency, log }) {
  const server = await startChild(SERVER);
  const origin = `http://127.0.0.1:${server.info.port}`;
  const load = (variant, warm, duration) =>
    runChild(
      LOAD,
      [
        ...['--variant', variant, '--origin', origin, '--concurrency', String(concurrency)],
        ...['--warmup-ms', String(warm), '--duration-ms', String(duration)],
      ],
      { timeoutMs: warm + duration + 60_000 },
    );
  const rounds = [];
  const skipped = {};
  try {
    await load(BASELINE, 200, Math.min(1000, durationMs)); // warms the server's JIT; discarded
    for (let r = 0; r < runs; r += 1) {
      const round = {};
      for (const variant of rotate(HTTP_VARIANTS, r)) {
        if (skipped[variant]) continue;
        const result = await load(variant, warmupMs, durationMs);
        if (result.skipped) {
          skipped[variant] = result.skipped;
          continue;
        }
        round[variant] = result;
        log(`  http round ${r + 1}/${runs} ${variant}: ${Math.round(result.reqPerSec)} req/s`);
      }
      rounds.push(round);
    }
  } finally {
    await server.stop();
  }
  return summarizeHttp(rounds, skipped, { runs, warmupMs, durationMs, concurrency });
}

export function summarizeHttp(rounds, skipped, settings) {
  const variants = {};
  for (const name of HTTP_VARIANTS) {
    if (skipped[name]) {
      variants[name] = { skipped: skipped[name] };
      continue;
    }
    const own = rounds.map((r) => r[name]).filter(Boolean);
    const entry = { runs: own.length, errors: own.reduce((s, r) => s + r.errors, 0) };
    const withStats = own.filter((r) => r.stats);
    if (withStats.length > 0) {
      entry.stats = { requests: own.reduce((n, r) => n + r.requests, 0) };
      for (const r of withStats) {
        for (const [k, v] of Object.entries(r.stats)) {
          entry.stats[k] = typeof v === 'boolean' ? (entry.stats[k] ?? true) && v : (entry.stats[k] ?? 0) + v;
        }
      }
    }
    const firstError = own.find((r) => r.firstError)?.firstError;
    if (firstError) entry.firstError = firstError;
    for (const m of METRICS) entry[m] = rounded(summarize(own.map((r) => r[m])));
    entry.ratio = {};
    for (const m of METRICS) {
      const perRound = rounds.map((r) => (r[name] && r[BASELINE] ? ratio(r[name][m], r[BASELINE][m]) : null));
      entry.ratio[m] = rounded(summarize(perRound));
    }
    variants[name] = entry;
  }
  const pairs = HTTP_PAIRS.map((pair) => comparePair(rounds, variants, pair));
  const pairOf = (variant, against) =>
    pairs.find((p) => p.variant === variant && (against === undefined || p.against === against));
  const goals = [];
  const prazoRequest = variants['prazo-request'];
  if (prazoRequest && !prazoRequest.skipped) {
    goals.push(
      goal({
        what: 'prazo request() req/s ÷ bare undici.request',
        atLeast: REQUEST_GOAL,
        achieved: prazoRequest.ratio.reqPerSec.median,
        // What tells the code's cost from the machine's noise when the goal is missed.
        note: `CPU µs/req ${prazoRequest.ratio.cpuUsPerReq.median}× undici, p50 ${prazoRequest.ratio.p50Ms.median}×, req/s ratio over rounds ${prazoRequest.ratio.reqPerSec.min}–${prazoRequest.ratio.reqPerSec.max}`,
      }),
    );
  }
  const request = pairOf('prazo-request', 'undici-pool');
  const requestTwin = pairOf('prazo-request', 'undici-pool-header');
  const interceptor = pairOf('undici-interceptor', 'undici');
  const interceptorTwin = pairOf('undici-interceptor', 'undici-header');
  goals.push(
    pairGoal(request, 'prazo request() req/s ÷ bare undici Pool.request (same dispatcher)', requestTwin),
    cpuGoal(
      request,
      'prazo request() client CPU µs/req ÷ bare undici Pool.request',
      REQUEST_CPU_GOAL,
      requestTwin,
    ),
    pairGoal(
      interceptor,
      'undici.request via Agent().compose(interceptor()) req/s ÷ bare Agent',
      interceptorTwin,
    ),
    cpuGoal(
      interceptor,
      'undici.request via Agent().compose(interceptor()) client CPU µs/req ÷ bare Agent',
      REQUEST_CPU_GOAL,
      interceptorTwin,
    ),
    pairGoal(
      pairOf('fetch-interceptor', 'fetch-agent'),
      'global fetch via setGlobalDispatcher(interceptor) req/s ÷ bare Agent',
    ),
  );
  const execute = pairOf('prazo-execute', 'undici');
  if (execute !== undefined)
    goals.push(
      cpuGoal(
        execute,
        'execute() around undici.request client CPU µs/req ÷ bare',
        EXECUTE_CPU_GOAL,
        pairOf('prazo-execute', 'undici-signal-header'),
      ),
    );
  return { settings: { ...settings, baseline: BASELINE }, variants, pairs, goals, rounds };
}

/**
 * One pair of HTTP_PAIRS: the variant's req/s, CPU µs/req and p50 divided by its counterpart's in the
 * same round, summarised over the rounds. A pair whose side was not available says which and why.
 */
function comparePair(rounds, variants, { variant, against, why }) {
  const missing = [variant, against].find((n) => !variants[n] || variants[n].skipped);
  const entry = { variant, against, why };
  if (missing) entry.unavailable = `${missing}: ${variants[missing]?.skipped ?? 'not run'}`;
  entry.ratio = {};
  for (const m of ['reqPerSec', 'cpuUsPerReq', 'p50Ms']) {
    const perRound = rounds.map((r) =>
      r[variant] && r[against] ? ratio(r[variant][m], r[against][m]) : null,
    );
    entry.ratio[m] = rounded(summarize(perRound));
  }
  return entry;
}

function pairGoal(pair, what, twin) {
  const r = pair.ratio;
  return goal({
    what,
    atLeast: LIKE_FOR_LIKE_GOAL,
    achieved: r.reqPerSec.median,
    unavailable: pair.unavailable,
    note: `req/s ratio over rounds ${r.reqPerSec.min}–${r.reqPerSec.max}; CPU µs/req ${r.cpuUsPerReq.median}×${twinNote(twin, 'reqPerSec')}`,
  });
}

/** A pair's client CPU per request against its twin's, at most `atMost` ×. */
function cpuGoal(pair, what, atMost, twin) {
  const r = pair.ratio;
  return goal({
    what,
    atMost,
    achieved: r.cpuUsPerReq.median,
    unavailable: pair.unavailable,
    note: `CPU ratio over rounds ${r.cpuUsPerReq.min}–${r.cpuUsPerReq.max}; req/s ${r.reqPerSec.median}×${twinNote(twin, 'cpuUsPerReq')}`,
  });
}

/**
 * The same figure against the variant's like-for-like twin (the same call carrying what prazo makes
 * it carry: the deadline header, the attempt's signal), in a goal's note: the goal stays against the
 * bare call, the note tells prazo's own cost from the cost of carrying a deadline at all.
 */
function twinNote(twin, metric) {
  if (twin === undefined || twin.unavailable !== undefined) return '';
  return `; ÷ ${twin.against} (like for like): ${twin.ratio[metric].median}×`;
}

function rounded(s) {
  return { median: round(s.median), min: round(s.min), max: round(s.max) };
}
