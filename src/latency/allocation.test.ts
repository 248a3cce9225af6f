import { PerformanceObserver, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { createLatencyRecorder } from './recorder.js';

/**
 * `record` is allocation-free once the sketch is sized: 2 million records must not trigger the young
 * generation collections that even 16 bytes per record (32 MB) would.
 */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('latency recorder: allocation-free record', () => {
  it('2M records, both outcomes, cause no minor GC', async () => {
    const clock = new FakeClock();
    const rec = createLatencyRecorder({ clock, windowMs: 1000 });
    const values = new Float64Array(4096).map((_, i) => 5 + ((i * 7919) % 2000) / 10);
    for (let i = 0; i < 200_000; i += 1) rec.record(values[i & 4095]!, 'success'); // size the bins, JIT
    clock.advance(1000);
    for (let i = 0; i < 200_000; i += 1) rec.record(values[i & 4095]!, i % 7 === 0 ? 'timeout' : 'success');
    const starts: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const detail = (entry as { detail?: { kind?: number } }).detail;
        if (detail?.kind === 1) starts.push(entry.startTime);
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    gc();
    const t0 = performance.now();
    for (let i = 0; i < 2_000_000; i += 1) rec.record(values[i & 4095]!, i % 7 === 0 ? 'error' : 'success');
    const t1 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20)); // entries are delivered asynchronously
    observer.disconnect();
    // only collections that started inside the loop count (the test runner allocates around it)
    expect(starts.filter((t) => t >= t0 && t <= t1).length).toBeLessThanOrEqual(1);
    expect(rec.currentWindow().count).toBe(2_200_000);
  });
});
