/**
 * grpc-js deadlines are `Date | number` (wall-clock epoch ms; `Infinity` means none). Turns one into
 * epoch ms, or `undefined` for "no deadline" and for anything unusable (NaN, wrong type).
 */
export function grpcDeadlineEpochMs(deadline: unknown): number | undefined {
  const epoch = deadline instanceof Date ? deadline.getTime() : deadline;
  return typeof epoch === 'number' && Number.isFinite(epoch) ? epoch : undefined;
}
