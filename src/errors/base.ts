import type { ErrorCode } from './codes.js';

/**
 * The brand every prazo error carries, under a registry symbol (`Symbol.for`, as undici's errors do):
 * the same symbol in every installed copy of prazo, so an error thrown by one copy (a library's
 * dependency) is recognised by another's guards and `instanceof` — two copies of a class never are
 * `instanceof` each other otherwise.
 */
const BRAND = Symbol.for('prazo.error');

const hasBrand = (value: unknown): value is PrazoError =>
  value !== null &&
  typeof value === 'object' &&
  (value as Record<symbol, unknown>)[BRAND] === true &&
  typeof (value as { code?: unknown }).code === 'string';

/**
 * The one base class of every prazo failure. Match on `code` (stable strings) or on the subclass;
 * never on `message`, which is for humans and may be reworded.
 *
 * `instanceof` works across installed copies: `x instanceof DeadlineExceededError` is true for a
 * branded error whose `code` is that class's, whichever copy made it (a class declares its codes in
 * `prazoCodes`; a subclass of your own that declares none is matched the ordinary way).
 */
export class PrazoError extends Error {
  /** The codes this class stands for, for `instanceof` across copies. */
  protected static readonly prazoCodes: readonly string[] | undefined = undefined;

  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

Object.defineProperty(PrazoError.prototype, BRAND, { value: true });

/**
 * `instanceof` for PrazoError and its subclasses (inherited as a static): the brand for PrazoError
 * itself, the brand and one of its `prazoCodes` for a class that declares them, the prototype chain
 * for a subclass that declares none.
 */
function matches(this: typeof PrazoError, value: unknown): boolean {
  if (this === PrazoError) return hasBrand(value);
  if (!Object.hasOwn(this, 'prazoCodes')) return Function.prototype[Symbol.hasInstance].call(this, value);
  const codes = (this as unknown as { prazoCodes: readonly string[] }).prazoCodes;
  return hasBrand(value) && codes.includes(value.code);
}

Object.defineProperty(PrazoError, Symbol.hasInstance, { value: matches });

/** True for any error prazo produced, by this installed copy or another (its brand, not `instanceof`). */
export function isPrazoError(error: unknown): error is PrazoError {
  return hasBrand(error);
}

/**
 * Text that came from outside (a resolver's error, an unknown key of the caller's object) as a message
 * quotes it: on one line, control characters (a newline, a terminal escape) written as `\xNN`, and
 * cut past `max` characters. The whole original stays wherever the error keeps it (its `cause`).
 */
export function quoteLine(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is escaped
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/**
 * A thrown value as text for a message: `String()` itself throws on some (an object without a
 * prototype, a revoked Proxy, a `toString` that throws), and the message must still be made. Quoted
 * on one line and cut past `max` characters ({@link quoteLine}).
 */
export function thrownText(error: unknown, max = 200): string {
  let text: string;
  try {
    text = String(error);
  } catch {
    return 'a value that cannot be shown';
  }
  return quoteLine(text, max);
}
