import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, Timer } from '../clock/clock.js';
import { answer, listen, shut } from '../demo/services/http.js';

/**
 * The dependency double of the degradation drill (SPEC V2): it answers every request, successfully,
 * but only after `latencyMs`, the timeout the service is configured with for that dependency. Not its
 * normal latency: the question is what happens to the service when this dependency takes all the
 * time the calibration allows it, on every call, for as long as the load lasts.
 *
 * Before the incident the drill runs a healthy phase with the double answering at once
 * (`setLatency(0)`): the baseline the independent routes' p99 is judged against (issue 23). A
 * request takes the latency in force when it arrived.
 */
export interface Double {
  readonly origin: string;
  readonly port: number;
  /** Requests received so far, and still being held. */
  arrivals(): number;
  inFlight(): number;
  /** The answer time of the requests that arrive from now on, in ms (0: at once). */
  setLatency(latencyMs: number): void;
  close(): Promise<void>;
}

export async function startDouble(options: {
  readonly latencyMs: number;
  readonly port?: number;
  readonly clock: Clock;
}): Promise<Double> {
  const { clock } = options;
  let latencyMs = options.latencyMs;
  const timers = new Set<Timer>();
  let arrivals = 0;
  let held = 0;
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    arrivals += 1;
    held += 1;
    req.resume();
    let done = false;
    const release = (): void => {
      if (done) return;
      done = true;
      held -= 1;
      clock.clearTimer(timer);
      timers.delete(timer);
    };
    const holdMs = latencyMs;
    const timer = clock.setTimer(() => {
      answer(res, 200, { double: true, latencyMs: holdMs });
      release();
    }, holdMs);
    timers.add(timer);
    res.once('close', release);
  };
  const { server, port } = await listen(handler, options.port ?? 0);
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    arrivals: () => arrivals,
    inFlight: () => held,
    setLatency: (ms) => {
      latencyMs = ms;
    },
    close: async () => {
      for (const timer of timers) clock.clearTimer(timer);
      timers.clear();
      await shut(server);
    },
  };
}
