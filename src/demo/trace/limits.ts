/**
 * The bounds of the demo's span recording (issue #26 item 2), per service and scenario: constant
 * memory whatever the load. 24 traces of at most 64 spans: the naive stack's worst checkout (three
 * attempts at each of three client hops) is 1 + 3 + 9 + 27 attempts and as many server spans below
 * the gateway, past 64 at the supplier only; what is cut is counted (`dropped`).
 */
export const DEMO_TRACE_LIMITS = Object.freeze({
  /** Traces each service keeps per scenario (the ones with the smallest ids: `recorder.ts`). */
  maxTraces: 24,
  /** Spans kept per trace and service. */
  maxSpansPerTrace: 64,
  /** Events kept per span (prazo's decisions on a call). */
  maxEventsPerSpan: 16,
  /**
   * A trace that started this long before a service's recorder (made at the scenario's reset) is the
   * previous scenario's: the services of a stack are reset together, within a few ms of each other.
   */
  resetSkewMs: 500,
  /** Rows a waterfall draws at most (the rest are said, not drawn). */
  maxRows: 60,
});
