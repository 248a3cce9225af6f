import type { Metadata } from '@grpc/grpc-js';
import type { Clock } from '../clock/clock.js';
import { DeadlineHeaders } from '../deadline/constants.js';
import type { HeadersLike, IncomingDeadline } from '../deadline/headers.js';
import { formatGrpcTimeout } from '../deadline/parse.js';
import { grpcDeadlineEpochMs } from './deadline.js';

/** What the server wrapper reads from a call. */
export interface CallLike {
  readonly metadata?: Metadata;
  getDeadline(): unknown;
}

const firstString = (metadata: Metadata | undefined, name: string): string | undefined => {
  const value = metadata?.get(name)[0];
  return typeof value === 'string' ? value : undefined;
};

/**
 * The deadline a gRPC call brings (SPEC D1, D2, D8). grpc-js has already parsed `grpc-timeout` into
 * `call.getDeadline()` (and removed the header); it is turned back into a relative `grpc-timeout`
 * (rounded down) and read together with any `x-deadline-epoch-ms` / Envoy metadata by the same
 * reader as HTTP: the earliest valid one wins, none gives the default, all capped by `maxMs`.
 */
export function readCallDeadline(
  read: (headers: HeadersLike) => IncomingDeadline,
  clock: Clock,
  call: CallLike,
): IncomingDeadline {
  const headers: Record<string, string> = {};
  const epoch = grpcDeadlineEpochMs(call.getDeadline());
  if (epoch !== undefined) {
    // Read here, never sent: a call already out of time must read as expired (`0m`), which the wire
    // format cannot say (`formatGrpcTimeout` writes at least `1n`).
    const left = epoch - clock.epochNow();
    headers[DeadlineHeaders.grpcTimeout] = left > 0 ? formatGrpcTimeout(left) : '0m';
  }
  for (const name of [DeadlineHeaders.epochMs, DeadlineHeaders.envoyExpected]) {
    const value = firstString(call.metadata, name);
    if (value !== undefined) headers[name] = value;
  }
  return read(headers);
}
