import {
  createNoopMeter,
  type Meter,
  metrics,
  ProxyTracerProvider,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { createDependency } from '../../src/dependency/index.js';
import { instrumentPrazo } from '../../src/otel/index.js';

/**
 * What prazo/otel installs on an executor when the application has no SDK, or a tracer that records
 * nothing (issue #26, SPEC X3). What each costs per call is measured by `npm run bench` (micro cases
 * "executor execute() + otel, no SDK / no-op tracer / SDK metrics / SDK tracing every span", side by
 * side as ratios), never by a timed test on a shared machine.
 */

const noopTracing: TracerProvider = {
  getTracer: (name) => new ProxyTracerProvider().getDelegate().getTracer(name),
};

describe('prazo/otel without an SDK', () => {
  it('subscribes to nothing and installs no tracer: the executor does not even build its events', () => {
    metrics.disable();
    trace.disable();
    const dependency = createDependency({ name: 'd', p99Ms: 50 });
    const otel = instrumentPrazo({ dependencies: [dependency] });
    expect(otel.active).toBe(false);
    expect(otel.tracing).toBe(false);
    otel.dispose();
  });

  it('a meter that is not the API singleton subscribes; a no-op tracer is installed and changes no result', async () => {
    const plain = createDependency({ name: 'plain', p99Ms: 50 });
    const traced = createDependency({ name: 'traced', p99Ms: 50 });
    const otel = instrumentPrazo({
      dependencies: [traced],
      meter: Object.create(createNoopMeter()) as Meter,
      tracerProvider: noopTracing,
    });
    expect(otel.active).toBe(true);
    expect(otel.tracing).toBe(true);
    const results: unknown[][] = [[], []];
    for (const [i, dependency] of [plain, traced].entries()) {
      results[i]!.push(await dependency.execute(() => Promise.resolve(7), { idempotent: true }));
      results[i]!.push(
        await dependency
          .execute(() => Promise.reject(new Error('boom')), { idempotent: false })
          .catch((e: Error) => e.message),
      );
    }
    expect(results[1]).toEqual(results[0]);
    otel.dispose();
  });
});
