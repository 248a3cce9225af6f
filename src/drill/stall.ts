import type { Clock, Timer } from '../clock/clock.js';

/**
 * How much the machine stalled while the drill ran: a timer of the drill's own process, due every
 * `everyMs`, and how late each tick fired (issue 23: `prazo drill --load 5` was flaky on a loaded
 * machine).
 *
 * Why the drill's own process: it does little (it sends ~110 requests a second and reads their
 * answers), so when its timer fires 100 ms late the cause is the machine — every core busy with other
 * work — and the target's processes, on the same machine, stalled with it. Measured on the shared
 * 2-core machine at a load average of 4–14: in the demo's stack every process lagged at the same
 * instants, an idle supplier instance (3 ms of CPU per 250 ms) by 152 ms while the gateway lagged
 * 127 ms, and the catalog's slowest answers and the gateway pool's full samples fell on those
 * instants. A stall is what the machine adds to the probe's latencies, and what fills the
 * independent route's few spare connections for a moment: its answers wait unread in their sockets.
 *
 * Only stalls of at least `minStallMs` are kept, at most `maxStalls` of them (the longest win once
 * full): constant memory for any drill length. On the fake clock nothing is ever late.
 */
export interface Stall {
  /** Epoch ms at which the late tick fired (the end of the stall). */
  readonly epochMs: number;
  /** How late it fired, in ms: the stall's length. */
  readonly lateMs: number;
}

export interface StallProbe {
  /** Stops the probe; the stalls measured, in time order. */
  stop(): readonly Stall[];
}

/** The probe's settings (below: why these). */
export interface StallProbeSettings {
  readonly everyMs: number;
  readonly minStallMs: number;
  readonly maxStalls: number;
}

export const STALL_PROBE: StallProbeSettings = Object.freeze({
  /** Tick period, in ms. */
  everyMs: 20,
  /** Lateness below this is not a stall (timer resolution, a GC of a small heap). */
  minStallMs: 10,
  /** Stalls kept at most (the longest). */
  maxStalls: 2_000,
});

export function startStallProbe(clock: Clock, settings: Partial<StallProbeSettings> = {}): StallProbe {
  const { everyMs, minStallMs, maxStalls } = { ...STALL_PROBE, ...settings };
  const stalls: Stall[] = [];
  let due = clock.now() + everyMs;
  let timer: Timer | undefined;
  const tick = (): void => {
    const now = clock.now();
    const lateMs = now - due;
    if (lateMs >= minStallMs) {
      stalls.push({ epochMs: clock.epochNow(), lateMs: Math.round(lateMs) });
      if (stalls.length > maxStalls) {
        let shortest = 0;
        for (let i = 1; i < stalls.length; i += 1)
          if (stalls[i]!.lateMs < stalls[shortest]!.lateMs) shortest = i;
        stalls.splice(shortest, 1);
      }
    }
    due = now + everyMs;
    timer = clock.setTimer(tick, everyMs, { unref: true });
  };
  timer = clock.setTimer(tick, everyMs, { unref: true });
  return {
    stop: () => {
      if (timer !== undefined) clock.clearTimer(timer);
      timer = undefined;
      return [...stalls];
    },
  };
}

/** The longest stall in [fromEpochMs, toEpochMs], or 0. */
export function longestStall(stalls: readonly Stall[], fromEpochMs: number, toEpochMs: number): number {
  let longest = 0;
  for (const s of stalls)
    if (s.epochMs >= fromEpochMs && s.epochMs <= toEpochMs && s.lateMs > longest) longest = s.lateMs;
  return longest;
}
