import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock/fake.js';
import { Deadline } from '../deadline/deadline.js';
import { Connections, type RedisConnection } from './connections.js';

/** An ioredis-shaped connection, ready, that records what is written and answers nil at once. */
function recorder(): { connection: RedisConnection; written: unknown[][] } {
  const written: unknown[][] = [];
  const connection = {
    status: 'ready',
    duplicate: () => connection,
    call: (...args: unknown[]) => {
      written.push(args);
      return Promise.resolve(null);
    },
  };
  return { connection: connection as unknown as RedisConnection, written };
}

/** The blocking commands of one exchange run one after the other on the server (SPEC D7). */
describe('Connections: the block budget of one exchange', () => {
  const bounds = (deadline: Deadline) => ({ deadline, timed: true, graceMs: 0, signal: undefined }) as const;

  it('two BLPOPs share it; a single one, or one with a shorter timeout of its own, as before', async () => {
    const clock = new FakeClock();
    const { connection, written } = recorder();
    const connections = new Connections(connection, 1, 100, clock, 'redis');
    const deadline = Deadline.after(900, { clock }); // budget: 900 − 100 = 800 ms
    await connections.exchange(
      [
        ['BLPOP', ['a', 10]],
        ['GET', ['k']],
        ['BLPOP', ['b', 0]],
      ],
      undefined,
      bounds(deadline),
    );
    expect(written).toEqual([
      ['BLPOP', 'a', '0.400'],
      ['GET', 'k'],
      ['BLPOP', 'b', '0.400'],
    ]);
    written.length = 0;
    await connections.exchange([['BLPOP', ['a', 10]]], undefined, bounds(deadline));
    expect(written).toEqual([['BLPOP', 'a', '0.800']]);
    written.length = 0;
    await connections.exchange(
      [
        ['BLPOP', ['a', '0.1']],
        ['XREAD', ['BLOCK', 0, 'STREAMS', 's', '$']],
      ],
      undefined,
      bounds(deadline),
    );
    expect(written).toEqual([
      ['BLPOP', 'a', '0.1'],
      ['XREAD', 'BLOCK', '700', 'STREAMS', 's', '$'],
    ]); // what the short one leaves goes to the other
    expect(connections.stuck).toBe(0);
  });
});
