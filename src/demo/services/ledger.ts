import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../../clock/clock.js';
import { DemoHeaders } from '../constants.js';
import type { BucketCounts, LedgerReport } from '../types.js';

interface Open {
  readonly startEpochMs: number;
  readonly giveUpEpochMs: number;
}

/**
 * Accounting of one service's work against the user's give-up instant (wasted work, SPEC X1). The
 * load generator stamps each user request with the instant its user gives up (a demo-only header);
 * every service passes it on and, for each request it handles, counts the time it kept working after
 * that instant. The header is read here and nowhere else: no stack decides anything with it.
 */
export class WorkLedger {
  readonly #clock: Clock;
  readonly #bucketMs: number;
  readonly #open = new Set<Open>();
  readonly #arrivals: Record<string, number> = {};
  #requests = 0;
  #wastedMs = 0;
  #wastedRequests = 0;

  constructor(clock: Clock, bucketMs: number) {
    this.#clock = clock;
    this.#bucketMs = bucketMs;
  }

  /** Counts a request in; call the returned function once, when the work for it has ended. */
  begin(headers: IncomingHttpHeaders): () => void {
    const startEpochMs = this.#clock.epochNow();
    const key = String(Math.floor(startEpochMs / this.#bucketMs));
    this.#arrivals[key] = (this.#arrivals[key] ?? 0) + 1;
    this.#requests += 1;
    const giveUpEpochMs = giveUpOf(headers);
    const entry: Open = { startEpochMs, giveUpEpochMs };
    this.#open.add(entry);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open.delete(entry);
      const wasted = wastedMs(entry, this.#clock.epochNow());
      if (wasted > 0) {
        this.#wastedMs += wasted;
        this.#wastedRequests += 1;
      }
    };
  }

  /** Work in progress right now. */
  get inFlight(): number {
    return this.#open.size;
  }

  report(): LedgerReport {
    const now = this.#clock.epochNow();
    let wasted = this.#wastedMs;
    let wastedRequests = this.#wastedRequests;
    let stillRunning = 0;
    for (const entry of this.#open) {
      const w = wastedMs(entry, now);
      if (w > 0) {
        wasted += w;
        wastedRequests += 1;
        stillRunning += 1;
      }
    }
    return {
      requests: this.#requests,
      inFlight: this.#open.size,
      wastedMs: Math.round(wasted),
      wastedRequests,
      stillRunning,
    };
  }

  arrivals(): BucketCounts {
    return { ...this.#arrivals };
  }
}

function wastedMs(entry: Open, endEpochMs: number): number {
  const from = Math.max(entry.startEpochMs, entry.giveUpEpochMs);
  return endEpochMs > from ? endEpochMs - from : 0;
}

/** The give-up instant the request carries; none (a request from outside the demo) never wastes. */
export function giveUpOf(headers: IncomingHttpHeaders): number {
  const raw = headers[DemoHeaders.giveUp];
  const value = typeof raw === 'string' ? Number(raw) : Number.NaN;
  return Number.isFinite(value) ? value : Number.POSITIVE_INFINITY;
}

/** The accounting header to pass on downstream (and only it). */
export function accountingHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const raw = headers[DemoHeaders.giveUp];
  return typeof raw === 'string' ? { [DemoHeaders.giveUp]: raw } : {};
}
