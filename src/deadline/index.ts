export { currentDeadline, runWithDeadline } from './ambient.js';
export { type CallWithDeadlineOptions, callWithDeadline, type DeadlineCallContext } from './call.js';
export { DeadlineHeaders, MAX_DEADLINE_HEADER_LENGTH } from './constants.js';
export { Deadline, type DeadlineOptions, HEADER_FORMAT_OPTIONS, type HeaderFormat } from './deadline.js';
export {
  createDeadlineReader,
  type DeadlineSource,
  deadlineFromHeaders,
  type HeadersLike,
  INCOMING_DEADLINE_OPTIONS,
  type IncomingDeadline,
  type IncomingDeadlineOptions,
  readIncomingDeadline,
} from './headers.js';
export { formatGrpcTimeout, parseEpochMs, parseGrpcTimeout, parseRelativeMs } from './parse.js';
