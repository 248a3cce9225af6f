export { createLatencyRecorder, type LatencyRecorder, type LatencyRecorderOptions } from './recorder.js';
export type { LatencySnapshot, LatencySource, Outcome } from './types.js';
