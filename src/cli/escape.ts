/**
 * The CLI's output boundary: every character a terminal would obey instead of print is shown as an
 * escape (#24 item 7).
 *
 * What `prazo` prints mixes its own words with text from outside: a Prometheus server's error body
 * and warnings, a config file's keys and names, a histogram file's lines, the arguments themselves.
 * Any of it may carry ESC (`\e[2J` clears the screen, `\e]0;…\a` retitles the window, `\e]52;…` writes
 * the clipboard in some terminals), BEL, a carriage return that hides what came before it on the
 * line, or their 8-bit C1 forms (U+009B is CSI in terminals that honour C1). Escaping each source
 * where it is read would leave the next one unguarded, so the CLI escapes once, where text leaves:
 * `run` wraps `stdout` and `stderr` with {@link escapeControl}, and no command writes anywhere else.
 *
 * Text can also lie without a control character: a bidi override (U+202E) or isolate prints what
 * follows it right to left, so a name can make the rest of its line read as something else (the
 * "Trojan Source" trick); U+2028/U+2029 break lines in some terminals and viewers; an invisible
 * character (U+200B) makes two different names look alike.
 *
 * Escaped: C0 (U+0000–U+001F) but `\n` and `\t`, DEL (U+007F) and C1 (U+0080–U+009F, NEL among
 * them); U+2028 and U+2029; every bidi control (U+061C, U+200E, U+200F, U+202A–U+202E,
 * U+2066–U+2069); the invisible characters that have no place in a name (soft hyphen U+00AD, U+200B,
 * U+2060–U+2064, BOM U+FEFF) — each as `\uXXXX`. Kept: the zero-width joiners U+200C/U+200D (emoji
 * sequences and Persian or Indic words need them; a name that differs only by one is shown as two
 * equal-looking names, a risk judged smaller than garbling those) and the astral tag characters
 * (flag emoji sequences).
 *
 * That spelling is also a JSON escape, so `--json` output stays valid JSON that parses to the same
 * strings (`JSON.stringify` escapes C0 itself, but writes the rest raw), and a YAML one: `yaml`
 * writes a string holding DEL or C1 double-quoted, and `prazo export` double-quotes one holding any
 * character above, where `\u202e` means U+202E, so its YAML reads back the same too.
 */

/** Every character {@link escapeControl} rewrites. */
const CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/**
 * The progress display's redraw of its line on a terminal (carriage return, erase line): the one
 * control sequence the CLI writes itself, only to a terminal, only through `CliContext.redraw`.
 */
export const LINE_REDRAW = '\r\x1b[2K';

const spell = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every C0 control character but `\n` and `\t`, DEL, every C1 control character, the
 * line and paragraph separators, the bidi controls and the invisible characters above written as
 * `\uXXXX`. `keep`: one exact sequence of the CLI's own left as is (the progress display's
 * line redraw on a terminal); everything around it is escaped all the same.
 */
export function escapeControl(text: string, keep?: string): string {
  if (keep === undefined || keep === '') return text.replace(CONTROL, spell);
  return text
    .split(keep)
    .map((part) => part.replace(CONTROL, spell))
    .join(keep);
}
