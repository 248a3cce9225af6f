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
 * Parses an HTTP-date into epoch ms, or `undefined` when it is not one. `nowEpochMs` resolves the
 * two-digit years of rfc850 dates: one more than 50 years ahead is read as the past century's.
 */
export function parseHttpDate(value: string, nowEpochMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m !== null) return toEpoch(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = ASCTIME.exec(value);
  if (m !== null) return toEpoch(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  m = RFC850.exec(value);
  if (m === null) return undefined;
  const nowYear = yearOf(Number.isFinite(nowEpochMs) ? nowEpochMs : 0);
  let year = nowYear - (nowYear % 100) + Number(m[3]);
  if (year > nowYear + 50) year -= 100;
  return toEpoch(year, m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
}
