/**
 * Blocking commands carry their own server-side timeout; prazo rewrites it so that the *server*
 * answers before the deadline (SPEC D7). A blocking command the client merely stops waiting for
 * keeps its connection blocked on the server: every command written after it on that connection
 * waits behind it for the full block. With the block ending on the server first, its reply (a nil:
 * "nothing arrived in time") comes back in time and the connection is free for the next command.
 *
 * Where the timeout sits and its unit, per command (Redis 6.0+ accepts fractional seconds):
 * - BLPOP, BRPOP, BZPOPMIN, BZPOPMAX, BRPOPLPUSH, BLMOVE: the last argument, seconds, 0 = forever;
 * - BLMPOP, BZMPOP: the first argument, seconds;
 * - XREAD, XREADGROUP: `BLOCK <ms>` among the options, 0 = forever; absent = not blocking;
 * - WAIT, WAITAOF: the last argument, ms, 0 = forever.
 */

type Arg = string | number | Buffer;

/**
 * The longest block prazo writes, in ms (2^43, about 278 years): a deadline further away is endless
 * for any purpose, and up to it both units are written exactly (whole ms; seconds with 3 decimals).
 */
const MAX_BLOCK_MS = 2 ** 43;

/**
 * The block, in ms, the server may spend: what is left minus a margin for the reply's way back, at
 * least 1 (0 would mean "forever"). Redis reads a block as a 64-bit count of ms (seconds as a long
 * double), so a deadline weeks away is the block as it is: cut at a timer's 24.8 days, a `BLPOP` under
 * a 30-day deadline would answer nil days before it. Past {@link MAX_BLOCK_MS} (an endless deadline,
 * `Deadline.after(Infinity)`) Infinity: nothing to bound, the command's own timeout stands.
 */
export function serverBlockMs(remainingMs: number, marginMs: number): number {
  const ms = Math.floor(remainingMs - marginMs);
  return ms > MAX_BLOCK_MS ? Number.POSITIVE_INFINITY : ms >= 1 ? ms : 1;
}

const LAST_SECONDS = new Set(['blpop', 'brpop', 'bzpopmin', 'bzpopmax', 'brpoplpush', 'blmove']);
const FIRST_SECONDS = new Set(['blmpop', 'bzmpop']);
const LAST_MS = new Set(['wait', 'waitaof']);

/** Seconds with ms precision, as Redis reads a fractional timeout. */
const seconds = (ms: number): string => (ms / 1000).toFixed(3);

/**
 * The largest block, in ms, Redis reads: a 64-bit count, 2^63 − 1. Redis 7.0 takes any block up to
 * it (its end overflows: a block for ever in effect), later ones refuse one whose end overflows
 * their clock's count; such a value is read as the block it names, so that it is bounded either way.
 */
const MAX_TIMEOUT_MS = 2n ** 63n - 1n;
/** 2^63: a count of ms in seconds at or above it overflows, and Redis refuses it. */
const REFUSED_FROM_MS = 2 ** 63;

/** A block in ms as Redis's `string2ll` reads it: `0`, or an optional `-` and digits without a leading 0. */
const INTEGER = /^(?:0|-?[1-9][0-9]*)$/;
/** A decimal float as `strtold` reads it (no leading space: Redis refuses one), exponent optional. */
const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
/** A hexadecimal float as `strtold` reads it: `0x`, hex digits with an optional point, an optional `p` exponent. */
const HEX = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?$/;
/** Redis's longest float argument (`MAX_LONG_DOUBLE_CHARS`): 5 KiB, less its NUL. */
const MAX_FLOAT_BYTES = 5 * 1024 - 1;
/**
 * The smallest binary and decimal exponents of a nonzero x86-64 `long double` (2^-16445, about
 * 3.6e-4951): a value closer to 0 underflows, and Redis refuses it (`ERANGE`).
 */
const MIN_EXP2 = -16445;
const MIN_EXP10 = -4951;

/** An argument's text as the client sends it: a number in JS's form, a Buffer byte for byte (latin1). */
const textOf = (value: Arg): string => (typeof value === 'object' ? value.toString('latin1') : String(value));

/**
 * The block the caller asked for, in ms, read as the server reads it (SPEC D7): Infinity for
 * "forever" (0), NaN for a value it refuses, which is then left for it to refuse (never rewritten
 * into one it takes). In ms (`BLOCK`, `WAIT`): an integer by `string2ll` (no sign but `-`, no space,
 * no leading zero, no fraction nor exponent), never negative. In seconds (`BLPOP`…): a float by
 * `strtold` (decimal with an exponent, or hexadecimal; `inf` and `nan` refused), never negative,
 * times 1000 rounded up, so a fraction of a ms is 1 ms and anything in (−1 ms, 0] is "forever".
 */
export function askedMs(value: Arg | undefined, unit: 'ms' | 's'): number {
  if (value === undefined) return Number.NaN;
  const text = textOf(value);
  if (unit === 'ms') {
    if (!INTEGER.test(text) || text.startsWith('-')) return Number.NaN;
    if (text === '0') return Number.POSITIVE_INFINITY;
    return BigInt(text) > MAX_TIMEOUT_MS ? Number.NaN : Number(text);
  }
  const bytes = typeof value === 'object' ? value.length : Buffer.byteLength(text);
  if (bytes === 0 || bytes > MAX_FLOAT_BYTES) return Number.NaN;
  // A NUL byte is refused too: Redis checks that strtold read every byte.
  const ms = Math.ceil(floatMs(text)); // -0 for (-1 ms, 0]: not negative, "forever"
  if (Number.isNaN(ms) || ms < 0 || ms >= REFUSED_FROM_MS) return Number.NaN;
  return ms === 0 ? Number.POSITIVE_INFINITY : ms;
}

/**
 * `text` as `strtold` reads it whole, in seconds, times 1000: NaN where it stops short or the value
 * is out of range. A decimal is scaled by its exponent, exactly ("2.007" is 2007 ms, where
 * 2.007 × 1000 is 2007.0000000000002 and would round up to 2008); a value too small for a double but
 * not for a `long double` comes back as the smallest double of its sign (all that matters is that it
 * is not zero).
 */
function floatMs(text: string): number {
  if (DECIMAL.test(text)) {
    const [mantissa = '', exponent = '0'] = text.split(/[eE]/);
    const ms = Number(`${mantissa}e${Number(exponent) + 3}`);
    if (!Number.isFinite(ms)) return Number.NaN; // beyond 2^63 ms either way: refused
    if (ms !== 0) return ms;
    const [whole = '', fraction = ''] = mantissa.replace(/^[+-]/, '').split('.');
    const first = (whole + fraction).search(/[1-9]/);
    if (first === -1) return ms; // a zero (±0)
    return tiny(text.startsWith('-'), Number(exponent) + whole.length - 1 - first, MIN_EXP10);
  }
  const hex = HEX.exec(text);
  if (hex === null) return Number.NaN;
  const [, sign, whole = '', fraction = '', exponent = '0'] = hex;
  const digits = whole + fraction;
  if (digits === '') return Number.NaN; // `0x` alone: strtold stops after the 0
  const first = digits.search(/[1-9a-fA-F]/);
  if (first === -1) return sign === '-' ? -0 : 0;
  const significant = digits.slice(first, first + 13); // 52 bits: all a double holds
  const mantissa = Number.parseInt(significant, 16);
  const exp2 = Number(exponent) + 4 * (digits.length - first - significant.length - fraction.length);
  const top = exp2 + Math.floor(Math.log2(mantissa));
  if (top >= 64) return Number.NaN; // 2^64 s and more: beyond 2^63 ms either way, refused
  if (top < -1074) return tiny(sign === '-', top, MIN_EXP2);
  const seconds = mantissa * 2 ** (exp2 + 64) * 2 ** -64;
  return (sign === '-' ? -seconds : seconds) * 1000;
}

/** A nonzero value of exponent `exp` too small for a double: refused below `min`, else its sign. */
function tiny(negative: boolean, exp: number, min: number): number {
  if (exp < min) return Number.NaN;
  return negative ? -Number.MIN_VALUE : Number.MIN_VALUE;
}

/** Where a command's block timeout sits, and its unit. */
interface BlockAt {
  readonly index: number;
  readonly unit: 'ms' | 's';
}

/** XREAD/XREADGROUP options taking one value (Redis 8.4 adds CLAIM, later ones MAXCOUNT/MAXSIZE). */
const STREAM_VALUE_OPTIONS = new Set(['count', 'block', 'claim', 'maxcount', 'maxsize']);

/**
 * The index of the value of XREAD/XREADGROUP's `BLOCK`, read as the server reads the options: one
 * token at a time up to `STREAMS`, each option skipping its own values — so a group, a consumer or a
 * COUNT value that reads "block" or "streams" is never taken for the option. `GROUP <group>
 * <consumer>` (XREADGROUP only) may stand anywhere among the options; a repeated BLOCK counts the
 * last (the server keeps the last). A token it does not know (an option of a later Redis) cannot be
 * skipped with certainty: the rest is scanned for the BLOCK instead ({@link scannedBlockIndex}), so
 * that an unknown option never hides a `BLOCK 0` that would then wait for ever.
 */
function streamBlockIndex(group: boolean, args: readonly Arg[]): number {
  let block = -1;
  let i = 0;
  while (i < args.length) {
    const token = String(args[i]).toLowerCase();
    const more = args.length - i - 1;
    if (token === 'streams') return more >= 1 ? block : -1; // no STREAMS <key> <id>: the server refuses it
    if (STREAM_VALUE_OPTIONS.has(token) && more >= 1) {
      if (token === 'block') block = i + 1;
      i += 2;
    } else if (group && token === 'group' && more >= 2) i += 3;
    else if (group && token === 'noack') i += 1;
    else return scannedBlockIndex(args, i, block);
  }
  return -1;
}

/** A value the server reads as a block in ms: digits only (it refuses a sign, a fraction, spaces). */
const MS_VALUE = /^[0-9]+$/;
const readsAsMs = (value: Arg | undefined): boolean =>
  value !== undefined && MS_VALUE.test(typeof value === 'object' ? value.toString() : String(value));

/**
 * The BLOCK among options read from `from` on without knowing them all (how many values an unknown
 * option takes): the server's `STREAMS` is taken to be the first "streams" followed by as many ids as
 * keys (an even, non-empty rest), and before it the last "block" followed by a value in ms is the
 * BLOCK (the server keeps the last; `block`, the one read before `from`, stands if none follows).
 * Conservative on both sides: a BLOCK is bounded even behind an option prazo does not know, and an
 * argument is rewritten only where it reads as the value of a BLOCK (a key, an id after STREAMS
 * never is). -1 with no such STREAMS: the server refuses the command.
 */
function scannedBlockIndex(args: readonly Arg[], from: number, block: number): number {
  let found = block;
  for (let i = from; i < args.length; i += 1) {
    const token = String(args[i]).toLowerCase();
    const rest = args.length - i - 1;
    if (token === 'streams' && rest >= 2 && rest % 2 === 0) return found;
    if (token === 'block' && readsAsMs(args[i + 1])) found = i + 1;
  }
  return -1;
}

function blockAt(command: string, args: readonly Arg[]): BlockAt | undefined {
  const name = command.toLowerCase();
  if (args.length === 0) return undefined;
  if (LAST_SECONDS.has(name)) return { index: args.length - 1, unit: 's' };
  if (FIRST_SECONDS.has(name)) return { index: 0, unit: 's' };
  if (LAST_MS.has(name)) return { index: args.length - 1, unit: 'ms' };
  if (name === 'xread' || name === 'xreadgroup') {
    const index = streamBlockIndex(name === 'xreadgroup', args);
    return index === -1 ? undefined : { index, unit: 'ms' };
  }
  return undefined;
}

/**
 * The block a command asks of the server, in ms: undefined when it does not block, Infinity for
 * "forever", NaN for a timeout the server will refuse (it then blocks not at all).
 */
export function blockAsked(command: string, args: readonly Arg[]): number | undefined {
  const at = blockAt(command, args);
  return at === undefined ? undefined : askedMs(args[at.index], at.unit);
}

export interface BoundedCommand {
  readonly args: readonly Arg[];
  /** True when the command blocks on the server and its block was bounded by the deadline. */
  readonly blocking: boolean;
}

/**
 * `args` with the block bounded by `blockMs` (the shorter of the two wins; an unreadable timeout is
 * left for the server to refuse). Any other command comes back as given.
 */
export function boundBlocking(command: string, args: readonly Arg[], blockMs: number): BoundedCommand {
  const at = blockAt(command, args);
  if (at === undefined) return { args, blocking: false };
  const asked = askedMs(args[at.index], at.unit);
  if (Number.isNaN(asked) || asked <= blockMs) return { args, blocking: true };
  const copy = [...args];
  copy[at.index] = at.unit === 's' ? seconds(blockMs) : String(blockMs);
  return { args: copy, blocking: true };
}

/**
 * The blocks of commands written together, which the server runs one after the other on their
 * connection: their sum must fit in `budgetMs`, or the last ones end past the deadline and leave
 * the connection blocked. Each gets an even share of what the others leave (a command asking less
 * than its share keeps its own, and the rest is shared among the others), rounded down to whole ms,
 * at least 1 (0 would mean "forever"; below 1 ms per command the sum can exceed the budget, by
 * at most 1 ms a command). `asked[i]` as {@link blockAsked} reads it (NaN: blocks not at all).
 * Alone, a command gets the whole budget; an endless budget (Infinity) is every command's.
 */
export function shareBlock(asked: readonly number[], budgetMs: number): number[] {
  if (budgetMs === Number.POSITIVE_INFINITY) return asked.map(() => budgetMs); // endless: none bounded
  const need = asked.map((a) => (Number.isNaN(a) ? 0 : a));
  const order = need.map((_, i) => i).sort((a, b) => need[a]! - need[b]!);
  const share: number[] = new Array<number>(asked.length);
  let left = budgetMs;
  order.forEach((index, k) => {
    const even = Math.max(1, Math.floor(left / (order.length - k)));
    share[index] = even;
    left -= Math.min(need[index]!, even);
  });
  return share;
}
