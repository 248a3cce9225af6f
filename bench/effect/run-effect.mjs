import { parseArgs } from 'node:util';
import { report } from '../lib/child.mjs';
import { Unavailable } from '../lib/prazo.mjs';
import { amplification } from './amplification.mjs';
import { hedging } from './hedging.mjs';
import { instances } from './instances.mjs';

/** One simulated incident, one process, on prazo's FakeClock: deterministic for a given seed. */
const { values } = parseArgs({
  options: {
    scenario: { type: 'string' },
    seed: { type: 'string', default: '1' },
    'outage-seconds': { type: 'string', default: '60' },
    rps: { type: 'string', default: '100' },
    requests: { type: 'string', default: '20000' },
  },
});
const scenarios = { amplification, hedging, instances };
const run = scenarios[values.scenario];
if (!run) throw new Error(`unknown scenario: ${values.scenario}`);
try {
  report({
    scenario: values.scenario,
    ...(await run({
      seed: Number(values.seed),
      outageSeconds: Number(values['outage-seconds']),
      rps: Number(values.rps),
      requests: Number(values.requests),
    })),
  });
} catch (error) {
  if (!(error instanceof Unavailable)) throw error;
  report({ scenario: values.scenario, skipped: error.message });
}
