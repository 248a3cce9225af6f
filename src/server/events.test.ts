import { describe, expect, it, vi } from 'vitest';
import { createServerEventHub, defaultServerEvents, onServerEvent, type ServerEvent } from './events.js';
import { createServerStats } from './stats.js';

const base = { framework: 'node', method: 'GET', source: 'default' } as const;
const finished = (overrunMs: number): ServerEvent => ({
  type: 'finished',
  ...base,
  statusCode: 200,
  elapsedMs: 10 + overrunMs,
  budgetMs: 10,
  overrunMs,
});

describe('server events', () => {
  it('delivers to listeners in order until disposed (idempotent dispose)', () => {
    const hub = createServerEventHub();
    const seen: string[] = [];
    const a = hub.onServerEvent(() => seen.push('a'));
    hub.onServerEvent(() => seen.push('b'));
    expect(hub.active).toBe(true);
    hub.emit(finished(0));
    a.dispose();
    a.dispose();
    hub.emit(finished(0));
    expect(seen).toEqual(['a', 'b', 'b']);
  });

  it('a throwing listener neither stops the others nor escapes', () => {
    const hub = createServerEventHub();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const seen: string[] = [];
    hub.onServerEvent(() => {
      throw new Error('bad listener');
    });
    hub.onServerEvent((e) => seen.push(e.type));
    expect(() => hub.emit(finished(0))).not.toThrow();
    expect(seen).toEqual(['finished']);
    expect(warn).toHaveBeenCalledOnce();
    warn.mockRestore();
  });

  it('onServerEvent subscribes to the process-wide hub', () => {
    const seen: ServerEvent[] = [];
    const sub = onServerEvent((e) => seen.push(e));
    defaultServerEvents.emit(finished(0));
    sub.dispose();
    defaultServerEvents.emit(finished(0));
    expect(seen).toHaveLength(1);
  });

  it('stats count wasted work, its overrun, expirations and cancellations', () => {
    const hub = createServerEventHub();
    const stats = createServerStats(hub);
    hub.emit(finished(0));
    hub.emit(finished(30));
    hub.emit({ type: 'wasted-work', ...base, statusCode: 200, elapsedMs: 40, overrunMs: 30 });
    hub.emit({ type: 'wasted-work', ...base, statusCode: 200, elapsedMs: 15, overrunMs: 5 });
    hub.emit({ type: 'rejected-expired', ...base });
    hub.emit({ type: 'cancelled', ...base, reason: 'deadline', elapsedMs: 10 });
    hub.emit({ type: 'cancelled', ...base, reason: 'client-disconnect', elapsedMs: 3 });
    stats.dispose();
    hub.emit({ type: 'rejected-expired', ...base });
    expect(stats).toMatchObject({
      finished: 2,
      wasted: 2,
      wastedMs: 35,
      rejectedExpired: 1,
      cancelledByDeadline: 1,
      cancelledByDisconnect: 1,
      handlerErrors: 0,
    });
    expect(hub.active).toBe(false);
  });
});
