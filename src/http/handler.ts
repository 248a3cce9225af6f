import type { Clock } from '../clock/clock.js';

/** The shapes an attempt plugs into: undici's handler callbacks, and what it reads from its client. */

/** undici's dispatch-handler callbacks that its request API uses. */
export interface UndiciHandler {
  onConnect(abort: (reason?: Error) => void, context?: object): void;
  onResponseStarted?(): void;
  onHeaders(status: number, headers: Buffer[], resume: () => void, statusText: string): boolean | undefined;
  onData(chunk: Buffer): boolean | undefined;
  onComplete(trailers: string[] | null): void;
  onError(error: Error): void;
}

/** Per-client settings every attempt reads (built once). */
export interface AttemptScope {
  readonly name: string;
  readonly clock: Clock;
  readonly connectTimeoutMs: number;
}
