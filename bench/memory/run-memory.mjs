import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import { report } from '../lib/child.mjs';
import { prazo, Unavailable } from '../lib/prazo.mjs';
import { createSeedBudget } from './seed-budget.mjs';

/**
 * Memory of one retry budget after a full window at a given event rate, on a fake clock (run with
 * `--expose-gc`); heap data only, compiled code excluded (see `heap()`), measured as the difference
 * between two identical batches of budgets (see below). One event = one original request that fails and asks for a retry (recordOriginal +
 * tryConsume), the worst case for a budget that stores each event. Heap after full GCs, with the
 * budgets alive, per budget = what one budget retains. Then the cost per event in
 * the steady state (window full, every event also evicts old ones), timed on the real clock, for at
 * most `steady-ms` of real time.
 */
const { values } = parseArgs({
  options: {
    design: { type: 'string' },
    rate: { type: 'string', default: '100000' },
    'window-ms': { type: 'string', default: '10000' },
    'steady-ms': { type: 'string', default: '1000' },
    /** Budgets per batch (retained bytes are divided by it): averages out GC noise. */
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

/**
 * Data on the heap after full GCs: every space but code (compiled code comes and goes with the JIT
 * and bytecode flushing, swinging the total by ±130 KB, far more than a bucketed budget weighs).
 */
function heap() {
  for (let i = 0; i < 3; i += 1) globalThis.gc();
  let bytes = 0;
  for (const space of v8.getHeapSpaceStatistics()) {
    if (!space.space_name.includes('code') && space.space_name !== 'read_only_space')
      bytes += space.space_used_size;
  }
  return bytes;
}

const eventsPerWindow = Math.round((rate * windowMs) / 1000);
// All copies share one clock and see the same events, so the clock is not counted per budget.
const clock = new FakeClock();

/** Creates `n` budgets and feeds each a full window of events; returns them (kept alive by the caller). */
function fill(n) {
  const budgets = Array.from({ length: n }, () => make(clock));
  for (let i = 0; i < eventsPerWindow; i += 1) {
    clock.advance(stepMs);
    for (const budget of budgets) budget.event();
  }
  return budgets;
}

// Differential measurement: a first batch of `copies` budgets is filled (V8's own metadata for this
// code, feedback, allocation sites, is paid there); then each further identical batch is filled
// between two heap readings, and the growth is that batch's data only. The median of three such
// growths, per budget, is the figure (a GC-timing outlier in one batch does not move it).
const held = [fill(copies)];
await new Promise((r) => setTimeout(r, 50));
const growths = [];
for (let b = 0; b < 3; b += 1) {
  const before = heap();
  held.push(fill(copies));
  growths.push((heap() - before) / copies);
}
growths.sort((x, y) => x - y);
const retainedBytes = growths[1];

// Steady state on a budget of the last batch (the shared clock is at the end of its window): its
// window is full, and each event now also evicts old ones.
const budget = held[held.length - 1][0];
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
  growths,
  steadyEvents,
  nsPerEvent: (elapsedMs * 1e6) / steadyEvents,
  state: { originals: state.originals ?? state.originais, extras: state.extras },
  held: held.length,
});
