import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { currentDeadline, runWithDeadline } from '../deadline/ambient.js';
import { callWithDeadline } from '../deadline/call.js';
import { Deadline } from '../deadline/deadline.js';
import { isDeadlineInsufficient, isInvalidOptions } from '../errors/guards.js';
import { createOverrunTracker } from './overrun.js';
import { createSliceRunner } from './slice.js';
import type { LatencyBudget } from './types.js';

// The seed's POST /pedidos budget (SLO 800 ms).
const budget: LatencyBudget = {
  endpoint: 'POST /pedidos',
  totalSloMs: 800,
  components: [
    { name: 'gateway', kind: 'local', sliceMs: 30 },
    { name: 'servico_pedido', kind: 'local', sliceMs: 120 },
    { name: 'banco_dados', kind: 'remote', sliceMs: 250 },
    { name: 'servico_estoque', kind: 'remote', sliceMs: 300 },
    { name: 'serializacao', kind: 'local', sliceMs: 100 },
  ],
};

describe('createSliceRunner (SPEC B2, B3)', () => {
  it("makes the component's slice the ambient deadline, never later than the request's", async () => {
    const clock = new FakeClock();
    const runner = createSliceRunner({ budget, clock });
    const seen = await runWithDeadline(Deadline.after(2_000, { clock }), () =>
      runner.run('servico_estoque', () => currentDeadline()?.remainingMs()),
    );
    expect(seen).toBe(300);
    const tight = await runWithDeadline(Deadline.after(100, { clock }), () =>
      runner.run('servico_estoque', () => currentDeadline()?.remainingMs()),
    );
    expect(tight).toBe(100);
    expect(await runner.run('gateway', () => currentDeadline()?.remainingMs())).toBe(30);
    expect(runner.sliceMs('banco_dados')).toBe(250);
  });

  it('fails a call that cannot fit its p99 in the slice, without calling it', async () => {
    const clock = new FakeClock();
    const runner = createSliceRunner({ budget, clock });
    let called = 0;
    const error = await runner
      .run('banco_dados', () =>
        callWithDeadline(currentDeadline()!, {
          name: 'postgres',
          p99Ms: 400,
          execute: async () => {
            called++;
          },
        }),
      )
      .catch((e: unknown) => e);
    expect(isDeadlineInsufficient(error)).toBe(true);
    expect(error).toMatchObject({ remainingMs: 250, neededMs: 400 });
    expect(called).toBe(0);
  });

  it('reports what each run took to the overrun tracker', async () => {
    const clock = new FakeClock();
    const tracker = createOverrunTracker({ budget, clock, minCalls: 1 });
    const runner = createSliceRunner({ budget, tracker, clock });
    await runner.run('serializacao', () => clock.advance(150));
    await runner.run('serializacao', () => clock.advance(50));
    await expect(
      runner.run('serializacao', () => {
        clock.advance(120);
        throw new Error('failed late');
      }),
    ).rejects.toThrow('failed late');
    const row = tracker.report().find((r) => r.name === 'serializacao');
    expect(row).toMatchObject({ calls: 3, overruns: 2 });
  });

  it('refuses an unknown component and a missing budget', async () => {
    const runner = createSliceRunner({ budget, clock: new FakeClock() });
    await expect(runner.run('servico_estoq', () => 1)).rejects.toThrow(
      /no component `servico_estoq`; did you mean `servico_estoque`\?/,
    );
    try {
      createSliceRunner({} as never);
      expect.unreachable();
    } catch (error) {
      expect(isInvalidOptions(error)).toBe(true);
    }
  });
});
