import type { ErrorCode } from './codes.js';

/**
 * The one base class of every prazo failure. Match on `code` (stable strings) or on the subclass;
 * never on `message`, which is for humans and may be reworded.
 */
export class PrazoError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** True for any error prazo produced. */
export function isPrazoError(error: unknown): error is PrazoError {
  return error instanceof PrazoError;
}
