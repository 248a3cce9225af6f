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
 * Escaped: C0 (U+0000–U+001F) but `\n` and `\t`, DEL (U+007F) and C1 (U+0080–U+009F), each as
 * `\uXXXX`. That spelling is also a JSON escape, so `--json` output stays valid JSON that parses to
 * the same strings (`JSON.stringify` already escapes C0 itself, but writes DEL and C1 raw), and a
 * YAML one: `yaml` writes a string holding DEL or C1 double-quoted, where `\u0085` means U+0085, so
 * `prazo export`'s YAML reads back the same too.
 */

/** Every character {@link escapeControl} rewrites. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * The progress display's redraw of its line on a terminal (carriage return, erase line): the one
 * control sequence the CLI writes itself, only to a terminal, only through `CliContext.redraw`.
 */
export const LINE_REDRAW = '\r\x1b[2K';

const spell = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every C0 control character but `\n` and `\t`, DEL and every C1 control character
 * written as `\uXXXX`. `keep`: one exact sequence of the CLI's own left as is (the progress display's
 * line redraw on a terminal); everything around it is escaped all the same.
 */
export function escapeControl(text: string, keep?: string): string {
  if (keep === undefined || keep === '') return text.replace(CONTROL, spell);
  return text
    .split(keep)
    .map((part) => part.replace(CONTROL, spell))
    .join(keep);
}
