export { currentDeadline, runWithDeadline } from './ambient.js';
export { type CallWithDeadlineOptions, callWithDeadline, type DeadlineCallContext } from './call.js';
export { DeadlineHeaders, MAX_DEADLINE_HEADER_LENGTH } from './constants.js';
export { Deadline, type DeadlineOptions, type HeaderFormat } from './deadline.js';
export {
  createDeadlineReader,
  type DeadlineSource,
  deadlineFromHeaders,
  type HeadersLike,
  type IncomingDeadline,
  type IncomingDeadlineOptions,
  readIncomingDeadline,
} from './headers.js';
export { formatGrpcTimeout, parseEpochMs, parseGrpcTimeout, parseRelativeMs } from './parse.js';
