export { RECORDER_OPTIONS } from './options.js';
export { createLatencyRecorder, type LatencyRecorder, type LatencyRecorderOptions } from './recorder.js';
export type { LatencySnapshot, LatencySource, Outcome } from './types.js';
