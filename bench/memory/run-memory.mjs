import { parseArgs } from 'node:util';
import { report } from '../lib/child.mjs';
import { prazo, Unavailable } from '../lib/prazo.mjs';
import { createSeedBudget } from './seed-budget.mjs';

/**
 * Memory of one retry budget after a full window at a given event rate, on a fake clock (run with
 * `--expose-gc`). One event = one original request that fails and asks for a retry (recordOriginal +
 * tryConsume), the worst case for a budget that stores each event. Heap after a full GC, with the
 * budget alive, minus the heap before it existed = what the budget retains. Then the cost per event in
 * the steady state (window full, every event also evicts old ones), timed on the real clock, for at
 * most `steady-ms` of real time.
 */
const { values } = parseArgs({
  options: {
    design: { type: 'string' },
    rate: { type: 'string', default: '100000' },
    'window-ms': { type: 'string', default: '10000' },
    'steady-ms': { type: 'string', default: '1000' },
    /** Budgets measured together (retained bytes are divided by it): averages out GC noise. */
    copies: { type: 'string', default: '1' },
  },
});
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
const rate = Number(values.rate);
const windowMs = Number(values['window-ms']);
const steadyMs = Number(values['steady-ms']);
const copies = Number(values.copies);
const stepMs = 1000 / rate;

let FakeClock;
let createRetryBudget;
try {
  FakeClock = await prazo('testing', 'FakeClock');
  if (values.design === 'prazo') createRetryBudget = await prazo('budget', 'createRetryBudget');
} catch (error) {
  if (error instanceof Unavailable) {
    report({ design: values.design, skipped: error.message });
    process.exit(0);
  }
  throw error;
}

const make = (clock) => {
  if (values.design === 'seed') {
    const b = createSeedBudget({ janelaMs: windowMs, agora: () => clock.now() });
    const event = () => {
      b.registrarOriginal();
      return b.tentarConsumir();
    };
    return { event, state: () => b.estado() };
  }
  const b = createRetryBudget({ windowMs, clock });
  const event = () => {
    b.recordOriginal();
    return b.tryConsume();
  };
  return { event, state: () => b.state() };
};

function heap() {
  for (let i = 0; i < 3; i += 1) globalThis.gc();
  return process.memoryUsage().heapUsed;
}

const eventsPerWindow = Math.round((rate * windowMs) / 1000);
// Warm-up on a throw-away budget, so compiled code and feedback are not counted as the budget's.
{
  const clock = new FakeClock();
  const budget = make(clock);
  for (let i = 0; i < Math.min(eventsPerWindow, 50_000); i += 1) {
    clock.advance(stepMs);
    budget.event();
  }
}
const before = heap();
// All copies share one clock and see the same events, so the clock is not counted per budget.
const clock = new FakeClock();
const held = Array.from({ length: copies }, () => make(clock));
for (let i = 0; i < eventsPerWindow; i += 1) {
  clock.advance(stepMs);
  for (const budget of held) budget.event();
}
const retainedBytes = (heap() - before) / copies;

// Steady state on the first budget: its window is full, each event now also evicts one.
const budget = held[0];
let steadyEvents = 0;
const t0 = performance.now();
const virtualLimit = rate; // at most one virtual second
while (steadyEvents < virtualLimit && performance.now() - t0 < steadyMs) {
  for (let i = 0; i < 100; i += 1) {
    clock.advance(stepMs);
    budget.event();
  }
  steadyEvents += 100;
}
const elapsedMs = performance.now() - t0;
const state = budget.state();
report({
  design: values.design,
  rate,
  windowMs,
  eventsPerWindow,
  retainedBytes,
  steadyEvents,
  nsPerEvent: (elapsedMs * 1e6) / steadyEvents,
  state: { originals: state.originals ?? state.originais, extras: state.extras },
  held: held.length,
});
