/**
 * Every number the incident demo runs on (SPEC X1), in one place. Durations are milliseconds, rates
 * are requests per second. The defaults echo the seed: a user who gives up after 2 s, a supplier whose
 * healthy p99 is ~250 ms, and a gateway pool whose Little's-law limit is the seed's 500 ms (SPEC C6:
 * N / λ = 15 connections / 30 req/s; the seed has 50 / 100): about prazo's calibrated timeouts
 * (~300 ms at the supplier, ~400-500 ms above it: they wait for its hedge), far below naive's 3 s. The rates are modest on purpose: the demo runs on a laptop,
 * and the naive stack's retry storm multiplies them.
 */
export const DEMO_DEFAULTS = Object.freeze({
  /** The user's deadline: after this the answer is worth nothing (seed: "entre um e dois segundos"). */
  userDeadlineMs: 2_000,
  /** Offered rate of the route that reaches the supplier (`GET /checkout`). */
  checkoutRate: 20,
  /** Offered rate of the independent route (`GET /catalog`), which never touches the supplier. */
  catalogRate: 10,
  /** Connections of the gateway → orders pool, shared by both routes (the resource at stake). */
  poolConnections: 15,
  /** Load time of each scenario and stack. */
  loadMs: 3_000,
  /** After the load, how long lingering downstream work is awaited before the processes are stopped. */
  drainMaxMs: 2_000,
  /** Supplier instances behind the inventory service (round robin, like a Kubernetes Service). */
  supplierInstances: 3,
  /** Bucket of the time series (load over time, pool occupancy). */
  bucketMs: 250,
  /**
   * Healthy calibration phase: rate and length (C1 wants a histogram). 280 calls per hop: at 140, the
   * p97.5 the supplier is hedged after was its 137th answer, as low as 180 ms against a true 209,
   * hedging 4% of healthy calls (the "one slow instance" load bar is 5% in all).
   */
  calibrationRate: 80,
  calibrationMs: 3_500,
  /** Healthy load each stack takes once before the scenarios (JIT, connections: a warm service). */
  warmUpMs: 1_000,
  /** How long a started process may take to say it is ready. */
  startTimeoutMs: 15_000,
  /** After SIGTERM, how long a child gets before SIGKILL. */
  killGraceMs: 1_000,
});

/** The supplier double's healthy latency: log-normal, median 80 ms, p99 ≈ 250 ms (the seed's p99). */
export const SUPPLIER_PROFILE = Object.freeze({
  medianMs: 80,
  /** σ of ln(latency): ln(250 / 80) / z(0.99) = 1.139 / 2.326. */
  sigma: 0.49,
  /** Latencies are clamped to this floor (a loopback answer is never instant). */
  minMs: 5,
  /**
   * "Slow": answers at this multiple of the healthy p99 (seed: "several times its p99"): ≈ 1.5 s,
   * still inside the user's 2 s, but three times what the gateway pool tolerates (Little's law).
   */
  slowFactor: 6,
  /** "Tail": one instance of the supplier stalls on this share of its answers... */
  stallProbability: 0.15,
  /** ...for this long (a GC pause, a noisy neighbour). */
  stallMs: 1_500,
  /** Small uniform jitter (±) around slow answers, as a share of the latency. */
  jitter: 0.1,
  /** "Recover": every instance refuses connections for this long, then is healthy again. */
  outageMs: 4_000,
});

/** The naive stack: what library defaults and common snippets give (3 s per hop, 3 attempts). */
export const NAIVE_DEFAULTS = Object.freeze({
  timeoutMs: 3_000,
  attempts: 3,
});

/** The cockatiel stack: `retry(handleAll, { maxAttempts: 2 })` (3 attempts) wrapped around `timeout(3000)`. */
export const COCKATIEL_DEFAULTS = Object.freeze({
  timeoutMs: 3_000,
  attempts: 3,
  /** cockatiel's ExponentialBackoff default initial delay, in ms. */
  initialDelayMs: 128,
});

/** The prazo stack. */
export const PRAZO_STACK_DEFAULTS = Object.freeze({
  /** The gateway's deadline for a user request: the user's 2 s minus the user↔gateway hop (seed: t0 + 1900). */
  gatewayDeadlineMs: 1_900,
  /** Local ceiling of every inner service (SPEC D2): no caller makes them hold a request longer. */
  serviceMaxMs: 1_900,
  /**
   * How much earlier each inner hop's ceiling ends than its caller's (orders 1,850 ms, inventory
   * 1,800 ms): the hop below answers 504 before its caller's deadline aborts the request and destroys
   * the connection (`serviceCeilingMs` in run/topology.ts, issue 23).
   */
  hopMarginMs: 50,
  /** Attempts asked of the calibration (C3 reduces them when the deadline cannot fit them). */
  attempts: 2,
  /** Retry budget of each dependency (SPEC R1): 10 s window, 10% extra attempts. */
  budgetWindowMs: 10_000,
  budgetRatio: 0.1,
  /**
   * Floor of extra attempts per second. The default (3/s) protects routes that see a few requests a
   * minute; it is a whole window's allowance (30 extras per 10 s), spendable at once, which a run of
   * a few seconds at 20 req/s (40-60 requests) would mostly measure. The demo uses 0.3/s: 3 extras
   * per window, within 10% of any run of 2 s or more.
   */
  budgetMinPerSecond: 0.3,
  /**
   * The supplier is hedged after its p97, not the default p95: issue 15's bar for "one slow instance"
   * is at most 5% extra supplier load, and the first stalls of the slow instance, before the picker
   * has seen them, cost a hedge each (~1% of a 10 s run). At the p95, healthy answers alone cost 5%.
   */
  hedgePercentile: 0.975,
  /**
   * Connections of the gateway's pool the checkout chain leaves to the catalog (capacity-aware
   * waiting, issue 23): each hop of the checkout chain holds at most `poolConnections − poolReserve`
   * calls, so a slow or hung supplier can never take the pool the catalog shares. Little's law for
   * the catalog needs 10/s × ~5 ms = 0.05 connections; two absorb its bursts. The checkouts past
   * the limit are refused by the gateway's own checkout client, before they take a connection.
   */
  poolReserve: 2,
  /**
   * Checkouts the gateway's client lets wait for a slot of its limit (topology.ts `hopCapacity`): a
   * burst of healthy traffic at 100/s waits a few ms instead of being refused (1–2.3 % of healthy
   * checkouts were, with none).
   */
  gatewayQueue: 3,
  /**
   * Requests the throttle's window (1 s) needs before it refuses anything (the library's default is
   * 10). With capacity-aware waiting, a hung supplier's failures reach the throttle only as patient
   * attempts reach their deadline: at most `maxInFlight` (13) every ~1.8 s, about 7 a second, and the
   * calls refused CONCURRENCY_LIMITED meanwhile are not attempts. At 10 the throttle began refusing
   * only after ten of them had failed, while the slots they freed went to new patient calls: a
   * second wave held the gateway's connections for another 1.8 s (traced at 20/s: 6 more checkouts;
   * at 100/s: 4–5). A window of 5 requests is still no noise at the demo's rates: nothing is refused
   * while half of the attempts are answered (k = 2).
   */
  throttleMinRequests: 5,
});

/** Demo-only accounting headers. Never read by any stack's logic: only by the ledgers. */
export const DemoHeaders = Object.freeze({
  /** Epoch ms at which the user gives up (send time + user deadline). */
  giveUp: 'x-demo-give-up-epoch-ms',
});

export const DEMO_LIMITS = Object.freeze({
  maxRate: 2_000,
  maxLoadMs: 600_000,
  minLoadMs: 200,
  maxDrainMs: 120_000,
  maxPoolConnections: 10_000,
  maxSupplierInstances: 16,
});
