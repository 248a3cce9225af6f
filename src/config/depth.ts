import { CST, Lexer } from 'yaml';

/**
 * How deep a config file nests, measured before `yaml` parses it. Its parser and composer recurse
 * once per level, of either kind: brackets (`[`, `{`) and block structure (indentation, `- `, `? `,
 * `: `). A thousand levels overflow the stack, and the parse after that aborts the process (V8 FATAL,
 * beyond any try/catch), so a file nested deeper than the limit is refused before that, the two
 * kinds counted together: `- - [[` is four levels deep.
 *
 * The text is read through `yaml`'s own lexer, which is iterative (a loop over a state name, no
 * recursion per level), so what is a quoted string, a comment, a block scalar or a flow collection
 * is exactly what the parser will see: a `]` inside `"…"`, `'…'` or after a `#` closes nothing, and
 * the lines of a `|` block or of a multi-line string open nothing. A scan of the raw characters
 * cannot tell those apart, and every way it guesses wrong either refuses valid files or lets a
 * document nest without limit (`["]", ["]", …` reads as one level to a bracket count).
 *
 * Block levels are counted conservatively, with a stack of at most `limit + 2` columns: the columns
 * of the open block nodes. The first token of a line pops the columns deeper than it and opens its
 * own; each entry indicator that starts the line (`- `, `? `, `: `; properties and `---` in between
 * do not stop the run) opens one more at the column of what follows it on that line. Inside a flow
 * collection indentation is not structure, and only brackets count there, on top of the block
 * levels where the collection opened: pretty-printed JSON nests by its brackets, not twice. The
 * root is level 0. One pass, and it stops at the first token past the limit.
 */

/** Where the nesting first passes the limit, and of which kinds its levels are there. */
export interface TooDeep {
  /** Offset of the token that opens the level past the limit. */
  readonly offset: number;
  /** Levels opened by block structure (indentation, `- `, `? `, `: `). */
  readonly block: number;
  /** Levels opened by brackets (`[`, `{`) on top of them. */
  readonly flow: number;
}

/** Tokens that can precede a block collection's entry on its line without ending the run of indicators. */
const TRANSPARENT: ReadonlySet<string> = new Set(['anchor', 'tag', 'doc-start', 'doc-end']);
const INDICATORS: ReadonlySet<string> = new Set(['seq-item-ind', 'explicit-key-ind', 'map-value-ind']);

/** The first place `text` nests deeper than `limit` levels, brackets and block structure together. */
export function tooDeepAt(text: string, limit: number): TooDeep | undefined {
  const cols: number[] = [];
  let flow = 0;
  /** Block levels where the outermost open flow collection started. */
  let base = 0;
  let offset = 0;
  let lineStart = 0;
  /** The line (block context) has had its first token: later ones open a level only after an indicator. */
  let started = false;
  /** Only indicators, properties and `---` so far on this line. */
  let leading = true;
  /** An indicator was met: the next token on the line opens a level at its column. */
  let pending = false;
  /** The lexeme after a `SCALAR` marker is a scalar's source, whatever it looks like. */
  let scalar = false;
  const freshLine = (): void => {
    started = false;
    leading = true;
    pending = false;
  };
  const opened = (col: number): boolean => {
    cols.push(col);
    return cols.length - 1 > limit;
  };
  for (const lexeme of new Lexer().lex(text)) {
    const at = offset;
    let type: string | null;
    if (scalar) {
      scalar = false;
      type = 'scalar';
    } else {
      // The markers are not in the source (zero width).
      if (lexeme === CST.SCALAR) {
        scalar = true;
        continue;
      }
      if (lexeme === CST.DOCUMENT) continue;
      if (lexeme === CST.FLOW_END) {
        // The lexer ended every open flow collection (a line indented too little) and reads this
        // line again as block structure.
        flow = 0;
        freshLine();
        continue;
      }
      type = CST.tokenType(lexeme);
    }
    offset += lexeme.length;
    const nl = lexeme.lastIndexOf('\n');
    if (nl >= 0) {
      lineStart = at + nl + 1;
      // A newline, or a block scalar's lines: the next token starts a line.
      if (nl === lexeme.length - 1 && flow === 0) {
        freshLine();
        continue;
      }
    }
    if (type === 'space' || type === 'newline' || type === 'comment' || type === 'byte-order-mark') continue;
    if (flow > 0) {
      if (type === 'flow-seq-start' || type === 'flow-map-start') {
        flow += 1;
        if (base + flow > limit) return { offset: at, block: base, flow };
      } else if (type === 'flow-seq-end' || type === 'flow-map-end') flow -= 1;
      continue;
    }
    const col = at - lineStart;
    if (!started) {
      started = true;
      while (cols.length > 0 && cols[cols.length - 1]! > col) cols.pop();
      if ((cols.length === 0 || cols[cols.length - 1]! < col) && opened(col))
        return { offset: at, block: cols.length - 1, flow: 0 };
    } else if (pending && opened(col)) return { offset: at, block: cols.length - 1, flow: 0 };
    pending = leading && INDICATORS.has(type ?? '');
    leading = pending || (leading && TRANSPARENT.has(type ?? ''));
    if (type === 'flow-seq-start' || type === 'flow-map-start') {
      base = cols.length - 1;
      flow = 1;
      if (base + flow > limit) return { offset: at, block: base, flow };
    }
  }
  return undefined;
}
