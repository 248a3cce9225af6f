import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock, Timer } from '../clock/clock.js';
import { answer, listen, shut } from '../demo/services/http.js';

/**
 * The dependency double of the degradation drill (SPEC V2): it answers every request, successfully,
 * but only after `latencyMs`, the timeout the service is configured with for that dependency. Not its
 * normal latency: the question is what happens to the service when this dependency takes all the
 * time the calibration allows it, on every call, for as long as the load lasts.
 */
export interface Double {
  readonly origin: string;
  readonly port: number;
  /** Requests received so far, and still being held. */
  arrivals(): number;
  inFlight(): number;
  close(): Promise<void>;
}

export async function startDouble(options: {
  readonly latencyMs: number;
  readonly port?: number;
  readonly clock: Clock;
}): Promise<Double> {
  const { latencyMs, clock } = options;
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
    const timer = clock.setTimer(() => {
      answer(res, 200, { double: true, latencyMs });
      release();
    }, latencyMs);
    timers.add(timer);
    res.once('close', release);
  };
  const { server, port } = await listen(handler, options.port ?? 0);
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    arrivals: () => arrivals,
    inFlight: () => held,
    close: async () => {
      for (const timer of timers) clock.clearTimer(timer);
      timers.clear();
      await shut(server);
    },
  };
}
