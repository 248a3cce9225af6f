/**
 * The demo chain's configuration (SPEC C7), used by `prazo drill` when no config file is given and
 * the target is the demo's own services. The p99s are what the demo's calibration measures on a
 * quiet machine; the pool is the gateway's pool to orders, shared by the checkout route (which
 * reaches the supplier) and the catalog (which does not).
 */
export const DEMO_CONFIG_YAML = `# prazo drill: the demo chain  gateway → orders → inventory → supplier
version: 1
service:
  name: gateway
  defaultMs: 1900
  maxMs: 1900
dependencies:
  - name: orders
    p99Ms: 270
    attempts: 2
    defaultDeadlineMs: 1900
    retryBudget: { windowMs: 10000, maxRatio: 0.1, minPerSecond: 0.3 }
    # the gateway's pool to orders: 15 connections, 30 req/s (checkout + catalog) → 500 ms (SPEC C6)
    pool: { size: 15, rps: 30 }
  - name: inventory
    p99Ms: 260
    attempts: 2
    defaultDeadlineMs: 1900
    retryBudget: { windowMs: 10000, maxRatio: 0.1, minPerSecond: 0.3 }
  - name: supplier
    p99Ms: 250
    attempts: 2
    defaultDeadlineMs: 1900
    retryBudget: { windowMs: 10000, maxRatio: 0.1, minPerSecond: 0.3 }
    hedge: true
`;
