import type { LookupFunction, Socket } from 'node:net';
import { buildConnector, errors } from 'undici';
import { type Clock, LATE_TIMER_MS, runAfterIo } from '../clock/clock.js';
import { HTTP_DEFAULTS, HTTP_LIMITS } from './constants.js';

/**
 * The connect phase (SPEC C2, R4), done by undici's own connector with a precise timer around it.
 *
 * Why not undici's `connect.timeout`: undici arms it on its "fast timers", which tick every 499 ms,
 * so a 400 ms connect timeout fires somewhere between 500 ms and 1.5 s. A connect timeout exists to
 * fail fast when an instance is down; one that fires three times late does not. The timer here is one
 * per *connection* (not per call: keep-alive connections are reused), on the injected clock.
 *
 * Several addresses (SPEC R4, "another instance when there is one"): with `autoSelectFamily` Node
 * tries every address the lookup returns (happy eyeballs), each for at most `addressAttemptMs`, so a
 * dead first address moves on to the next one within the same connect timeout.
 */

export interface ConnectorOptions {
  readonly clock: Clock;
  /** The whole connect phase, all addresses included, in ms: read at each connect (it may be recalibrated). */
  readonly timeoutMs: () => number;
  readonly autoSelectFamily: boolean;
  /** A `dns.lookup`-compatible resolver (default: the system's). */
  readonly lookup?: LookupFunction | undefined;
}

type Connector = ReturnType<typeof buildConnector>;

/** Per-address attempt: Node's 250 ms by default, but never more than half the connect timeout. */
export function addressAttemptMs(timeoutMs: number): number {
  return Math.max(
    HTTP_LIMITS.minAddressAttemptMs,
    Math.min(HTTP_DEFAULTS.addressAttemptMs, Math.floor(timeoutMs / 2)),
  );
}

/** Builds an undici connector whose connect phase is bounded by `timeoutMs` on `clock`. */
export function createConnector(options: ConnectorOptions): Connector {
  const { clock } = options;
  const base = buildConnector({
    timeout: 0, // disables undici's coarse timer: ours below is the one in force
    autoSelectFamily: options.autoSelectFamily,
    autoSelectFamilyAttemptTimeout: addressAttemptMs(options.timeoutMs()),
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  return (connectOptions, callback) => {
    const timeoutMs = options.timeoutMs();
    let settled = false;
    const expire = (): void => {
      if (settled) return;
      // destroy() emits 'error' with this reason; the callback below then reports it.
      socket?.destroy(new errors.ConnectTimeoutError(`connect timeout after ${timeoutMs} ms`));
    };
    const armedAt = clock.now();
    const timer = clock.setTimer(() => {
      // Late (the loop was busy): the connect may have completed meanwhile, unread. Read it first.
      if (clock.now() - armedAt - timeoutMs >= LATE_TIMER_MS) runAfterIo(clock, expire);
      else expire();
    }, timeoutMs);
    let socket: Socket | undefined;
    try {
      socket = base(connectOptions, (error, connected) => {
        if (settled) return;
        settled = true;
        clock.clearTimer(timer);
        if (error) callback(error, null);
        else callback(null, connected as Socket);
      }) as unknown as Socket | undefined;
    } catch (error) {
      settled = true;
      clock.clearTimer(timer);
      throw error;
    }
    return socket;
  };
}
