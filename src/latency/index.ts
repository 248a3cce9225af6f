export { RECORDER_DEFAULTS, RECORDER_LIMITS } from './constants.js';
export { createLatencyRecorder, type LatencyRecorder, type LatencyRecorderOptions } from './recorder.js';
export type { LatencySnapshot, LatencySource, Outcome } from './types.js';
