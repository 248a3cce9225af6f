import { PrazoError } from './base.js';
import { ErrorCode } from './codes.js';

/**
 * Options were wrong. Raised once, at construction, listing every problem together so a user fixes
 * them in one pass ("`attempts` must be an integer in [1, 10], got 0").
 */
export class InvalidOptionsError extends PrazoError {
  protected static override readonly prazoCodes = [ErrorCode.INVALID_OPTIONS];
  /** Where the options were given (a function name, or `file:line`). */
  readonly context: string;
  readonly problems: readonly string[];

  constructor(context: string, problems: readonly string[]) {
    const list = problems.map((p) => `  - ${p}`).join('\n');
    super(ErrorCode.INVALID_OPTIONS, `invalid options for ${context}:\n${list}`);
    this.context = context;
    this.problems = Object.freeze([...problems]);
  }
}
