/**
 * Thresholds, windows and `for:` durations of the generated alert rules, with the reason for each.
 * `for:` is how long a condition must hold before it pages: long enough that one bad scrape or one
 * slow minute does not wake anyone, short enough that the retry ratio still arrives before the error
 * rate (SPEC R7: it moves about a minute earlier, so its warning waits only 2 minutes).
 */
export const RULE_DEFAULTS = Object.freeze({
  /** Window of every `rate()` in the rules: 5 minutes spans enough scrapes at a 15–60 s interval. */
  rateWindow: '5m',
  /**
   * Warning when the retry ratio passes this fraction of the budget's ratio: retries are masking a
   * degradation (at 0.1, 5% of requests need a second attempt). Critical at {@link exhaustedFraction}.
   */
  warnFraction: 0.5,
  warnFor: '2m',
  /**
   * The budget keeps extras ≤ ratio × originals whenever the ratio (not the floor) governs, so the
   * ratio sits at, not above, its cap when saturated: 90% of it means the budget is spent and failures
   * now reach users. Only alerted while traffic is high enough for the ratio to govern.
   */
  exhaustedFraction: 0.9,
  exhaustedFor: '5m',
  /**
   * The live p99 of *successful* attempts is censored at the timeout (a call cut by the timeout is not a
   * success), so it approaches a too-tight timeout without crossing it: alert when the timeout is below
   * p99 × this headroom (p99 above ~91% of the timeout), which includes timeout < p99 (SPEC C5, V1).
   */
  timeoutHeadroom: 1.1,
  timeoutFor: '10m',
  /**
   * Window of the fleet p99 the timeout is compared with: `histogram_quantile` over every instance's
   * buckets summed (SPEC C5, X8), not one process's recorder. 10 minutes holds enough calls for a p99.
   */
  fleetP99Window: '10m',
  /** Abandonment (response/body timeouts ÷ attempts) above 1% on a healthy dependency is too tight (C5). */
  abandonmentRatio: 0.01,
  /** "Healthy": fewer than this fraction of attempts end in an error (otherwise the dependency is the problem). */
  healthyErrorRatio: 0.01,
  abandonmentWindow: '10m',
  abandonmentFor: '10m',
  /** Refusals per second (over `rateWindow`) below which a refusal trickle is not worth a page. */
  refusalsMinPerSecond: 0.05,
  /** "Climbing": the 5-minute refusal rate is this many times the 1-hour one. */
  refusalsClimbFactor: 2,
  refusalsBaseline: '1h',
  refusalsFor: '5m',
  /**
   * A slice sized from its component's p99 is overrun ~1% of the time by design; 5% means the component
   * keeps eating into its neighbours' time (SPEC B3).
   */
  sliceOverrunRatio: 0.05,
  sliceWindow: '10m',
  sliceFor: '15m',
  /**
   * An instance ejected this many times within `instanceWindow` keeps failing after each return (the
   * ejections grow 30 s, 60 s, 120 s…: three take at least 3.5 minutes): prazo keeps users off it,
   * but it is sick and needs a person (SPEC X5). One ejection is the mechanism working, not a page.
   */
  instanceEjections: 3,
  instanceWindow: '15m',
  instanceFor: '1m',
  /**
   * The adaptive throttle's refusals as a share of the calls made to the dependency (refused + sent),
   * over `rateWindow`, summed over the fleet (docs/throttling.md). With k = 2 nothing is refused while
   * half of the attempts are accepted, and under 1% of calls while 60% are: 10% refused over five
   * minutes means the dependency failed most of what it was sent for a good part of them (an outage
   * or a brownout, not noise), far below the cap a full outage holds (`maxProbability`, 90%).
   * The 5-minute average, held `throttledFor`: a full outage crosses 10% after ~35 s and pages
   * ~2.5 minutes in; a 30-second blip peaks at 9% (0.9 × 30 / 300) and never pages; a minute down
   * does (the calls refused that minute are failures the callers saw). Warning, not critical: the
   * refusals are the protection working — the failing calls fail in microseconds and hold no
   * connection, so routes that do not use the dependency keep their capacity — and the page is about
   * the dependency, whose own alerts should already be firing.
   */
  throttledShare: 0.1,
  throttledFor: '2m',
  /** Refusals per second (over `rateWindow`, over the fleet) below which a share is not worth a page. */
  throttledMinPerSecond: 0.05,
  /**
   * A dependency whose p99 is assumed (a `kind`'s starting value, SPEC C8) and that serves traffic:
   * its timeouts rest on a number nobody measured. Held 15 minutes, so a deploy that is measured and
   * written back within the hour never pages; a warning, since nothing is failing yet.
   */
  assumedFor: '15m',
});

/** Alert names: stable, so silences and routes keep matching across regenerations. */
export const ALERTS = Object.freeze({
  retryRatioHigh: 'PrazoRetryRatioHigh',
  retryBudgetExhausted: 'PrazoRetryBudgetExhausted',
  budgetRefusalsClimbing: 'PrazoBudgetRefusalsClimbing',
  timeoutBelowP99: 'PrazoTimeoutBelowP99',
  abandonmentHigh: 'PrazoAbandonmentHigh',
  sliceOverrun: 'PrazoSliceOverrun',
  instanceEjectedRepeatedly: 'PrazoInstanceEjectedRepeatedly',
  dependencyThrottled: 'PrazoDependencyThrottled',
  p99Assumed: 'PrazoDependencyP99Assumed',
});

/** Dashboard identity: a fixed uid so re-importing replaces the dashboard instead of duplicating it. */
export const DASHBOARD = Object.freeze({
  uid: 'prazo-overview',
  title: 'prazo: timeouts, deadlines, retries',
  schemaVersion: 39,
  refresh: '30s',
  timeFrom: 'now-1h',
  /** Grafana's own grid is 24 columns wide. */
  gridColumns: 24,
  panelWidth: 12,
  panelHeight: 8,
});
