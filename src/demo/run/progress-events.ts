import type { StackName, UserResult } from '../types.js';
import type { Calibration } from './calibration.js';

/** What a demo run reports as it goes (the progress display listens; `--json` runs ignore it). */
export type ProgressEvent =
  | { readonly type: 'calibrating'; readonly loadMs: number }
  | { readonly type: 'warming'; readonly stack: StackName; readonly loadMs: number }
  | { readonly type: 'calibrated'; readonly calibration: Calibration }
  | {
      readonly type: 'scenario';
      readonly index: number;
      readonly total: number;
      readonly name: string;
      readonly title: string;
      readonly description: string;
    }
  | {
      readonly type: 'phase';
      readonly phase: 'starting' | 'load' | 'draining' | 'stopping';
      readonly stack: StackName;
      readonly loadMs: number;
    }
  | { readonly type: 'user'; readonly stack: StackName; readonly result: UserResult }
  | {
      readonly type: 'drained';
      readonly stack: StackName;
      readonly waitedMs: number;
      readonly cutOff: boolean;
    };
