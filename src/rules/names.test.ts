import { describe, expect, it } from 'vitest';
import { METRICS } from '../otel/constants.js';
import { exportedSeriesNames, familyNames, labelName, prometheusName } from './names.js';

describe('Prometheus names of prazo metrics', () => {
  it('exporter scheme: dots to underscores, counters end in _total, no unit suffix', () => {
    const N = familyNames('exporter');
    expect(N.attempts).toBe('prazo_dependency_attempts_total');
    expect(N.retryRatio).toBe('prazo_dependency_retry_ratio');
    expect(N.attemptDuration).toBe('prazo_dependency_attempt_duration');
    expect(N.deadlineInsufficient).toBe('prazo_dependency_deadline_insufficient_total');
    expect(N.wastedWorkTime).toBe('prazo_server_wasted_work_time_total');
    expect(N.throttled).toBe('prazo_dependency_throttled_total');
    expect(N.throttleProbability).toBe('prazo_dependency_throttle_probability');
  });

  it('otlp scheme follows prometheus/otlptranslator: unit words, _total last, _ratio once', () => {
    const N = familyNames('otlp');
    expect(N.attempts).toBe('prazo_dependency_attempts_total');
    expect(N.attemptDuration).toBe('prazo_dependency_attempt_duration_seconds');
    expect(N.timeoutConfigured).toBe('prazo_dependency_timeout_configured_seconds');
    expect(N.latencyP99).toBe('prazo_dependency_latency_p99_seconds');
    // `1` on a gauge appends `_ratio`, but the name already ends in it: not doubled.
    expect(N.retryRatio).toBe('prazo_dependency_retry_ratio');
    expect(N.wastedWorkTime).toBe('prazo_server_wasted_work_time_seconds_total');
    // A dimensionless gauge: `_ratio` appended, as the OpenTelemetry Collector writes it.
    expect(N.throttleProbability).toBe('prazo_dependency_throttle_probability_ratio');
    expect(N.throttled).toBe('prazo_dependency_throttled_total');
    expect(prometheusName({ ...METRICS.retryRatio, name: 'a.b' }, 'otlp')).toBe('a_b_ratio');
    expect(prometheusName({ ...METRICS.attempts, name: 'a.total.count' }, 'otlp')).toBe('a_count_total');
  });

  it('every metric has a distinct family, and histograms export _bucket/_count/_sum', () => {
    for (const scheme of ['exporter', 'otlp'] as const) {
      const families = Object.values(familyNames(scheme));
      expect(new Set(families).size).toBe(families.length);
      const series = exportedSeriesNames(scheme);
      expect(series).toContain(`${familyNames(scheme).attemptDuration}_bucket`);
      expect(series.every((s) => /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(s))).toBe(true);
    }
  });

  it('attribute names become label names', () => {
    expect(labelName('prazo.attempt.kind')).toBe('prazo_attempt_kind');
    expect(labelName('prazo.timeout.phase')).toBe('prazo_timeout_phase');
  });
});
