/**
 * HTTP-date parsing (RFC 9110 §5.6.7) without `Date`: IMF-fixdate, and the two obsolete formats
 * (rfc850, asctime) a recipient must still accept. Strict (case-sensitive names, fixed widths, valid
 * calendar dates), so a malformed value is refused rather than guessed at. The weekday is checked for
 * form only; RFC 9110 lets a recipient ignore it and a wrong one says nothing about the instant.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

const DAY_MS = 86_400_000;

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The proleptic Gregorian date of an epoch instant in ms (H. Hinnant's `civil_from_days`). */
export function civilOf(epochMs: number): { year: number; month: number; day: number } {
  const z = Math.floor(epochMs / DAY_MS) + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  return {
    year: yoe + era * 400 + (month <= 2 ? 1 : 0),
    month,
    day: doy - Math.floor((153 * mp + 2) / 5) + 1,
  };
}

/** The Gregorian year of an epoch instant in ms. */
export function yearOf(epochMs: number): number {
  return civilOf(epochMs).year;
}

const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number): number =>
  m === 2 ? (isLeap(y) ? 29 : 28) : m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;

function toEpoch(year: number, monthName: string, day: number, h: string, mi: string, s: string) {
  const month = MONTHS.indexOf(monthName) + 1;
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 60) return undefined;
  return daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000;
}

/**
 * The four-digit year of an rfc850 two-digit year `yy`, read in `nowYear` (RFC 9110 §5.6.7): a year
 * that would be more than 50 years in the future is the most recent past year ending in `yy`. So the
 * year is the one of the 100 years from `nowYear − 49` to `nowYear + 50` that ends in `yy`, measured
 * from now and not from a fixed pivot or from `now`'s century: in 2099, `-00` is 2100 (next year),
 * not 2000. Whole years, as the RFC words it ("a two-digit year that appears to be more than 50
 * years in the future"): 50 years ahead to the year is still ahead.
 */
export function rfc850Year(yy: number, nowYear: number): number {
  const low = nowYear - 49;
  return low + ((((yy - low) % 100) + 100) % 100);
}

/**
 * Parses an HTTP-date into epoch ms, or `undefined` when it is not one. `nowEpochMs` (the caller's
 * clock, never a fixed pivot) resolves the two-digit years of rfc850 dates: see {@link rfc850Year}.
 */
export function parseHttpDate(value: string, nowEpochMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m !== null) return toEpoch(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = ASCTIME.exec(value);
  if (m !== null) return toEpoch(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  m = RFC850.exec(value);
  if (m === null) return undefined;
  const nowYear = yearOf(Number.isFinite(nowEpochMs) ? nowEpochMs : 0);
  return toEpoch(rfc850Year(Number(m[3]), nowYear), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
}
