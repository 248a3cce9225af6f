import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake.js';
import { DemoHeaders } from '../constants.js';
import { accountingHeaders, WorkLedger } from './ledger.js';

const giveUpIn = (clock: FakeClock, ms: number) => ({ [DemoHeaders.giveUp]: String(clock.epochNow() + ms) });

describe('WorkLedger: work done after the user gave up (SPEC X1)', () => {
  it('counts only the time past the give-up instant', async () => {
    const clock = new FakeClock();
    const ledger = new WorkLedger(clock, 250);
    const inTime = ledger.begin(giveUpIn(clock, 2_000));
    const late = ledger.begin(giveUpIn(clock, 2_000));
    clock.advance(1_500);
    inTime();
    clock.advance(1_500);
    late(); // 1 s after the user gave up
    const afterGiveUp = ledger.begin(giveUpIn(clock, -500)); // arrived when the user was already gone
    clock.advance(300);
    afterGiveUp();
    expect(ledger.report()).toEqual({
      requests: 3,
      inFlight: 0,
      wastedMs: 1_300,
      wastedRequests: 2,
      stillRunning: 0,
    });
  });

  it('reports running work as a lower bound and ends a request once', () => {
    const clock = new FakeClock();
    const ledger = new WorkLedger(clock, 250);
    const end = ledger.begin(giveUpIn(clock, 100));
    clock.advance(400);
    expect(ledger.report()).toMatchObject({ inFlight: 1, wastedMs: 300, stillRunning: 1 });
    end();
    end();
    clock.advance(1_000);
    expect(ledger.report()).toMatchObject({ inFlight: 0, wastedMs: 300, wastedRequests: 1, stillRunning: 0 });
  });

  it('never wastes without a give-up instant, and never reads a malformed one', () => {
    const clock = new FakeClock();
    const ledger = new WorkLedger(clock, 250);
    for (const headers of [{}, { [DemoHeaders.giveUp]: 'soon' }, { [DemoHeaders.giveUp]: ['1', '2'] }]) {
      const end = ledger.begin(headers);
      clock.advance(10_000);
      end();
    }
    expect(ledger.report()).toMatchObject({ requests: 3, wastedMs: 0 });
    expect(accountingHeaders({ [DemoHeaders.giveUp]: '123', 'x-other': 'no' })).toEqual({
      [DemoHeaders.giveUp]: '123',
    });
    expect(accountingHeaders({})).toEqual({});
  });

  it('wasted time is never negative nor longer than the work itself', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            giveUp: fc.integer({ min: -5_000, max: 5_000 }),
            work: fc.integer({ min: 0, max: 5_000 }),
          }),
          { maxLength: 30 },
        ),
        (requests) => {
          const clock = new FakeClock();
          const ledger = new WorkLedger(clock, 250);
          let total = 0;
          for (const r of requests) {
            const end = ledger.begin(giveUpIn(clock, r.giveUp));
            clock.advance(r.work);
            end();
            total += r.work;
          }
          const { wastedMs, requests: n } = ledger.report();
          expect(wastedMs).toBeGreaterThanOrEqual(0);
          expect(wastedMs).toBeLessThanOrEqual(total);
          expect(n).toBe(requests.length);
        },
      ),
    );
  });

  it('counts arrivals per time bucket', () => {
    const clock = new FakeClock({ epoch: 1_000_000 });
    const ledger = new WorkLedger(clock, 250);
    ledger.begin({});
    clock.advance(100);
    ledger.begin({});
    clock.advance(200);
    ledger.begin({});
    expect(ledger.arrivals()).toEqual({ '4000': 2, '4001': 1 });
  });
});
