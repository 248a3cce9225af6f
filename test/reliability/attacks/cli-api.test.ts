/**
 * Attacks on the `prazo` command line (src/cli) and the drill's options (src/drill), driven in process
 * through `run` (src/cli/cli.test-helpers.ts), never by spawning node: bad flags, bad numbers, bad
 * files and paths, output that echoes hostile text, exit codes, help, and Ctrl-C on the fake clock.
 * Nothing here runs a demo or a drill's load: every case stops at validation, or drills a closed
 * loopback port for a few milliseconds.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/cli.test-helpers.js';
import { type CliContext, ExitCode } from '../../../src/cli/context.js';
import { escapeControl } from '../../../src/cli/escape.js';
import { INTERRUPTED, runInterruptible } from '../../../src/cli/interruptible.js';
import { FakeClock } from '../../../src/clock/fake.js';
import { resolveDrillOptions } from '../../../src/drill/options.js';
import { InvalidOptionsError } from '../../../src/errors/options.js';

const CONFIG = 'dependencies:\n  - name: a\n    p99Ms: 100\n';
const dir = mkdtempSync(join(tmpdir(), 'prazo-cli-attack-'));
const files: Record<string, string | Buffer> = {
  'ok.yaml': CONFIG,
  'bom.yaml': `\uFEFF${CONFIG}`,
  'crlf.yaml': CONFIG.replaceAll('\n', '\r\n'),
  'binary.yaml': Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 0x1b, 0x5b, 0x32, 0x4a, 0x9b]),
  'lat.txt': '10\n20\n30\n',
  'zeros.txt': `${'0\n'.repeat(200)}`,
  'huge.yaml': `# ${'x'.repeat(1024 * 1024)}\n${CONFIG}`, // past CONFIG_LIMITS.maxBytes (1 MiB)
  'evil\u001b[2J\u0007name.yaml': CONFIG,
};
for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
mkdirSync(join(dir, 'adir.yaml'));
mkdirSync(join(dir, 'sp ace ü 名'));
writeFileSync(join(dir, 'sp ace ü 名', 'c onf é.yaml'), CONFIG);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `run` in `dir`; every case must end with its exit code and never a stack trace. */
async function cli(...argv: string[]) {
  const r = await runCli(argv, dir);
  expect(`${r.out}${r.err}`, argv.join(' ')).not.toMatch(/\n\s+at .*[(:]\d+|unexpected failure/);
  return r;
}

/** A user error: exit 2, nothing on stdout, one message (`lines` lines) on stderr matching `reason`. */
async function refused(argv: string[], reason: RegExp, lines = 1) {
  const r = await cli(...argv);
  expect([r.code, r.out], argv.join(' ')).toEqual([ExitCode.badInput, '']);
  expect(r.err, argv.join(' ')).toMatch(reason);
  expect(r.err.trimEnd().split('\n'), argv.join(' ')).toHaveLength(lines);
  return r;
}

/** A character a terminal obeys instead of printing (C0 but \n and \t, DEL, C1). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

const COMMANDS = ['calibrate', 'check', 'demo', 'drill', 'export', 'rules'] as const;

describe('prazo: help, unknown flags and commands (docs/cli.md exit codes)', () => {
  it('--help, -h and `help <command>` for every command: usage on stdout, exit 0', async () => {
    for (const command of COMMANDS) {
      for (const argv of [
        [command, '--help'],
        [command, '-h'],
        ['help', command],
      ]) {
        const r = await cli(...argv);
        expect([r.code, r.err], argv.join(' ')).toEqual([0, '']);
        expect(r.out, argv.join(' ')).toMatch(new RegExp(`^Usage: prazo ${command} \\[options\\]`));
        expect(r.out).toContain('-h, --help');
      }
    }
  });

  it('an unknown flag of each command: exit 2, with the flag it most likely meant', async () => {
    const typos: Array<[string[], string, string]> = [
      [['calibrate', '--p9', '1'], '--p9', '--p99'],
      [['calibrate', '--p99', '1', '--deadlin', '5'], '--deadlin', '--deadline'],
      [['check', '--jsn'], '--jsn', '--json'],
      [['demo', '--quik'], '--quik', '--quick'],
      [['drill', '--targt', 'x'], '--targt', '--target'],
      [['export', '--too', 'istio'], '--too', '--to'],
      [['rules', '--nameing', 'otlp'], '--nameing', '--naming'],
    ];
    for (const [argv, typo, meant] of typos) {
      await refused(
        argv,
        new RegExp(`^error: unknown option '${typo}'\n\\(Did you mean ${meant}\\?\\)\n$`),
        2,
      );
    }
    await refused(['chek'], /unknown command 'chek'\n\(Did you mean check\?\)/, 2);
    await refused(['calibrate', '--p99', '1', 'extra'], /too many arguments for 'calibrate'/);
    await refused(['check', 'ok.yaml', 'other.yaml'], /too many arguments for 'check'/);
  });

  it('no command at all: the usage on stderr, exit 2 (a usage error, not success)', async () => {
    const r = await cli();
    expect([r.code, r.out]).toEqual([2, '']);
    expect(r.err).toMatch(/^Usage: prazo \[options\] \[command\]/);
  });
});

describe('prazo: numbers (SPEC C1: a NaN never flows into a calibration)', () => {
  it('refuses every number that is not a plain non-negative decimal, naming the flag', async () => {
    for (const raw of ['1e400', '0x10', '-0', '-1', '5ms', 'NaN', 'Infinity', '1_000', '1,5', '٥', '']) {
      await refused(
        ['calibrate', `--p99=${raw}`],
        new RegExp(
          `^prazo calibrate: --p99 must be a non-negative number of ms, got ${JSON.stringify(JSON.stringify(raw)).slice(1, -1)}\\n$`,
        ),
      );
    }
    await refused(
      ['drill', '--duration', '5ms'],
      /--duration must be a non-negative number of seconds, got "5ms"/,
    );
    await refused(['demo', '--duration', '0x10'], /--duration must be a non-negative number of seconds/);
    // 9 followed by 400 zeros is Infinity once read: refused, not a timeout of Infinity ms
    await refused(['calibrate', '--deadline', `9${'0'.repeat(400)}`, '--p99', '100'], /--deadline must be/);
  });

  it('surrounding spaces and a plus sign are read as the number (documented leniency)', async () => {
    for (const raw of [' 180', '180 ', '+180', '1.8e2', '180.']) {
      const r = await cli('calibrate', '--p99', raw, '--json');
      expect(r.code, raw).toBe(0);
      expect(JSON.parse(r.out).source.p99Ms, raw).toBe(180);
    }
  });

  it('numbers in range for the flag parser but not for the option: the library bound, one line', async () => {
    await refused(
      ['calibrate', '--p99', '100', '--attempts', '1e9'],
      /`attempts` must be an integer in \[1, 10\]/,
    );
    await refused(
      ['calibrate', '--p99', '100', '--pool-size', '1e308', '--rps', '0'],
      /`poolSize` must be an integer in \[1, 1000000\], got 1e\+308; `rps` must be a finite number in \(0, 10000000\], got 0/,
    );
    await refused(
      ['calibrate', '--p99', '100', '--deadline', '0'],
      /`userDeadlineMs` must be a finite number in \(0/,
    );
  });

  it('Was a defect: --p99 0 (or 1e-400, or a file of zeros) skipped the plausibility check and recommended 1 ms timeouts (SPEC C8)', async () => {
    await refused(
      ['calibrate', '--p99', '0'],
      /--p99: p99 0 ms is below 1 ms, faster than a call over a network can be/,
    );
    await refused(['calibrate', '--p99', '1e-400'], /--p99: p99 0 ms is below 1 ms/);
    await refused(
      ['calibrate', '--histogram', 'zeros.txt', '--unit', 'ms'],
      /zeros\.txt: p99 0 ms is below 1 ms/,
    );
    // declared real, it is calibrated
    expect((await cli('calibrate', '--p99', '0', '--kind', 'in-process')).code).toBe(0);
    expect((await cli('calibrate', '--p99', '0', '--unusual-p99')).code).toBe(0);
  });
});

describe('prazo calibrate --prometheus: --end (calibrate-fleet.ts)', () => {
  // port 9 (discard) is closed on loopback: a valid --end gets as far as "cannot reach Prometheus"
  const fleet = (...extra: string[]) => [
    'calibrate',
    '--prometheus',
    'http://127.0.0.1:9',
    '--config',
    'ok.yaml',
    ...extra,
  ];

  it('Was a defect: an impossible date (2025-02-30, T24:00) was rolled over by Date.parse into another window', async () => {
    for (const end of [
      '2025-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2025-04-31T00:00Z',
      '2025-01-01T24:00:00Z',
      '2025-01-01T23:60:00Z',
      '2025-01-01T23:59:60Z',
      '2025-13-01T00:00:00Z',
      '2025-00-10T00:00:00Z',
      '2025-01-00T00:00:00Z',
      '2025-01-01T00:00:00+24:00',
      '2025-01-01T00:00:00+01:60',
    ]) {
      await refused(
        fleet('--end', end),
        /^prazo calibrate: --end must be RFC 3339 \(2025-01-31T00:00:00Z\) or Unix seconds, got /,
      );
    }
    for (const end of [
      '2024-02-29T00:00:00Z',
      '2000-02-29T23:59:59.999+05:30',
      '2025-04-30T00:00Z',
      '1767225600',
    ]) {
      const r = await cli(...fleet('--end', end));
      expect(r.err, end).toMatch(/^prazo calibrate: cannot reach Prometheus at http:\/\/127\.0\.0\.1:9/);
    }
    const leap = await cli(...fleet('--end', '2024-02-29T00:00:00Z'));
    expect(leap.out).toContain('to 2024-02-29T00:00Z');
    await refused(
      fleet('--end', '99999999999999999999'),
      /`endEpochMs` must be a finite number in \[0, 8640000000000000\]/,
    );
  });
});

describe('prazo calibrate --prometheus: secret files', () => {
  it('Was a defect: a byte-order mark (a Windows editor) became part of the basic-auth user name and the bearer token', async () => {
    const seen: Array<string | undefined> = [];
    const server = createHttpServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(401).end('unauthorized');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    writeFileSync(join(dir, 'basic.txt'), '\uFEFFuser:pa:ss\r\n');
    writeFileSync(join(dir, 'token.txt'), '\uFEFFabc.def\n');
    try {
      for (const flags of [
        ['--basic-auth-file', 'basic.txt'],
        ['--bearer-token-file', 'token.txt'],
      ]) {
        const r = await cli('calibrate', '--prometheus', url, '--config', 'ok.yaml', ...flags);
        expect(r.code, flags.join(' ')).toBe(2);
        expect(r.err, flags.join(' ')).toMatch(/401/);
      }
      expect(new Set(seen)).toEqual(
        new Set([`Basic ${Buffer.from('user:pa:ss').toString('base64')}`, 'Bearer abc.def']),
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('prazo: flags given twice, or empty', () => {
  it("a flag given twice: the last one is used (commander's convention, which scripts use to override a default)", async () => {
    const twice = await cli('calibrate', '--p99', '100', '--p99', '200', '--json', '--json');
    expect(twice.code).toBe(0);
    expect(JSON.parse(twice.out).source.p99Ms).toBe(200);
    const to = await cli('export', '--config', 'ok.yaml', '--to', 'istio', '--to=envoy', '--json');
    expect(JSON.parse(to.out).target).toBe('envoy');
    // the last one is checked like any other
    await refused(
      ['calibrate', '--p99', '100', '--p99', 'x'],
      /--p99 must be a non-negative number of ms, got "x"/,
    );
    // repeatable flags collect
    const only = await cli(
      'export',
      '--config',
      'ok.yaml',
      '--to',
      'envoy',
      '--dependency',
      'a',
      '--dependency',
      'a',
    );
    expect(only.code).toBe(0);
  });

  it('Was a defect: an empty --out wrote into the working directory (an unset variable: --out="$OUT")', async () => {
    const before = readdirSync(dir).sort();
    await refused(['rules', '--config', 'ok.yaml', '--out='], /^prazo rules: --out needs a value, got ""\n$/);
    await refused(
      ['export', '--config', 'ok.yaml', '--to', 'istio', '--out', ' '],
      /--out needs a value, got " "/,
    );
    await refused(['calibrate', '--histogram='], /--histogram needs a value, got ""/);
    await refused(['check', ''], /^prazo check: <file> needs a value, got ""\n$/);
    expect(readdirSync(dir).sort()).toEqual(before);
  });
});

describe('prazo: files and paths', () => {
  it('missing, directory, binary, huge: exit 2 with one reason naming the file', async () => {
    await refused(['calibrate', '--histogram', 'nope.txt', '--unit', 'ms'], /cannot read nope\.txt: ENOENT/);
    await refused(
      ['calibrate', '--histogram', 'adir.yaml', '--unit', 'ms'],
      /cannot read adir\.yaml: .*is a directory/,
    );
    await refused(
      ['calibrate', '--histogram', 'binary.yaml', '--unit', 'ms'],
      /binary\.yaml: line 1: not a latency: "\\u0000\\u0001/,
    );
    const huge = await cli('check', 'huge.yaml');
    expect([huge.code, huge.out]).toEqual([2, '']);
    expect(huge.err).toMatch(/^huge\.yaml: error: cannot read: .*(too large|larger|exceeds|limit)/i);
    const d = await cli('check', 'adir.yaml');
    expect(d.code).toBe(2);
    expect(d.err).toContain('adir.yaml: error: cannot read:');
    const bin = await cli('check', 'binary.yaml');
    expect(bin.code).toBe(2);
    expect(bin.err).not.toMatch(RAW);
    await refused(
      ['calibrate', '--p99', '100', '--dependency', 'a', '--config', 'adir.yaml'],
      /cannot read adir\.yaml: .*is a directory/,
    );
    await refused(
      ['drill', '--target', 'http://127.0.0.1:1', '--independent', '/a', '--config', 'nope.yaml'],
      /nope\.yaml: error: cannot read: ENOENT/,
    );
    await refused(
      ['rules', '--config', 'nope.yaml'],
      /^prazo rules: nope\.yaml has problems:\n.*cannot read/,
      2,
    );
  });

  it('prototype keys as names (__proto__, constructor): "not in the config", never a crash', async () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      await refused(
        ['calibrate', '--p99', '100', '--dependency', name, '--config', 'ok.yaml'],
        new RegExp(`no dependency "${name}" \\(the file declares: a\\)`),
      );
      await refused(
        ['export', '--config', 'ok.yaml', '--to', 'envoy', '--dependency', name],
        new RegExp(`no dependency named \`${name}\``),
        2,
      );
      await refused(
        [
          'drill',
          '--target',
          'http://127.0.0.1:1',
          '--independent',
          '/a',
          '--config',
          'ok.yaml',
          '--dependency',
          name,
        ],
        new RegExp(`"${name}" is not in ok\\.yaml`),
      );
    }
  });

  it('BOM, CRLF, spaces and non-ASCII in paths: read like the plain file', async () => {
    for (const file of ['ok.yaml', 'bom.yaml', 'crlf.yaml', 'sp ace ü 名/c onf é.yaml']) {
      const r = await cli('check', file, '--json');
      expect([r.code, r.err], file).toEqual([0, '']);
      expect(JSON.parse(r.out).summary.dependencies[0], file).toMatchObject({
        name: 'a',
        p99Ms: 100,
        responseMs: 140,
      });
    }
    const out = join('sp ace ü 名', 'out dir é');
    const r = await cli('rules', '--config', 'sp ace ü 名/c onf é.yaml', '--out', out);
    expect(r.code).toBe(0);
    expect(readdirSync(join(dir, out)).sort()).toEqual(['prazo-alerts.yaml', 'prazo-dashboard.json']);
  });

  it('output paths: an existing file, a path below a file: exit 2 naming --out, nothing written', async () => {
    await refused(
      ['rules', '--config', 'ok.yaml', '--out', 'ok.yaml'],
      /^prazo rules: cannot write to ok\.yaml: EEXIST/,
    );
    await refused(
      ['rules', '--config', 'ok.yaml', '--out', 'ok.yaml/sub'],
      /cannot write to ok\.yaml\/sub: ENOTDIR/,
    );
    await refused(
      ['export', '--config', 'ok.yaml', '--to', 'istio', '--out', 'ok.yaml'],
      /^prazo export: cannot write to ok\.yaml/,
    );
    // an existing directory is where the files go (rewritten, not refused)
    mkdirSync(join(dir, 'outdir'));
    writeFileSync(join(dir, 'outdir', 'istio.yaml'), 'old');
    expect((await cli('export', '--config', 'ok.yaml', '--to', 'istio', '--out', 'outdir')).code).toBe(0);
  });

  it('Was a defect: demo --report to a directory or below a file was found only after the whole run', async () => {
    // --scenarios nope keeps the old code from running a demo: it stopped on that alone, saying nothing of the report
    await refused(
      ['demo', '--scenarios', 'nope', '--report', 'adir.yaml'],
      /^prazo demo: `scenarios`: unknown nope .*; --report adir\.yaml: is a directory\n$/,
    );
    await refused(
      ['demo', '--scenarios', 'nope', '--report', 'ok.yaml/r.html'],
      /--report ok\.yaml\/r\.html: not a directory: /,
    );
    await refused(
      ['demo', '--scenarios', 'nope', '--report', 'no/such/r.html'],
      /--report no\/such\/r\.html: no such directory: /,
    );
    // --no-report: nothing to check
    const r = await cli('demo', '--scenarios', 'nope', '--no-report');
    expect(r.err).not.toContain('--report');
  });
});

describe('prazo: terminal escapes in echoed text (escape.ts, #24 item 7)', () => {
  const HOSTILE = '\u001b[2J\u001b]0;pwned\u0007\u009b31m\r\u007f';

  it('arguments, file names, dependency names and commander echoes leave escaped', async () => {
    const cases = [
      ['check', 'evil\u001b[2J\u0007name.yaml'],
      ['check', `missing${HOSTILE}.yaml`],
      ['calibrate', '--p99', HOSTILE],
      ['calibrate', '--p99', '100', '--dependency', HOSTILE, '--config', 'ok.yaml'],
      ['calibrate', `--p9${HOSTILE}`],
      [`nope${HOSTILE}`],
      ['export', '--config', 'ok.yaml', '--to', HOSTILE],
      [
        'drill',
        '--target',
        `http://127.0.0.1:1${HOSTILE}`,
        '--independent',
        `/${HOSTILE}`,
        '--config',
        'ok.yaml',
      ],
    ];
    for (const argv of cases) {
      const r = await runCli(argv, dir);
      expect(`${r.out}${r.err}`, JSON.stringify(argv)).not.toMatch(RAW);
      expect(`${r.out}${r.err}`, JSON.stringify(argv)).toMatch(/\\u001b|\\u0007|\\u009b/);
    }
  });

  it('escapeControl keeps \\n and \\t, escapes all of C0, DEL and C1, and leaves other text alone', () => {
    for (let c = 0; c <= 0xa0; c++) {
      const ch = String.fromCharCode(c);
      const out = escapeControl(`a${ch}b`);
      if (ch === '\n' || ch === '\t' || (c >= 0x20 && c < 0x7f) || c === 0xa0) expect(out).toBe(`a${ch}b`);
      else expect(out).toBe(`a\\u${c.toString(16).padStart(4, '0')}b`);
    }
    expect(escapeControl('é名\u{1F600}')).toBe('é名\u{1F600}');
    // JSON output stays JSON that reads back to the same string
    expect(JSON.parse(escapeControl(JSON.stringify({ k: HOSTILE }))).k).toBe(HOSTILE);
  });

  /** What redraws or spoofs a line without being a C0/C1 control (escape.ts). */
  const SPOOF: Record<string, string> = {
    '\u2028': 'line separator',
    '\u2029': 'paragraph separator',
    '\u061c': 'arabic letter mark',
    '\u200e': 'left-to-right mark',
    '\u200f': 'right-to-left mark',
    '\u202a': 'left-to-right embedding',
    '\u202b': 'right-to-left embedding',
    '\u202c': 'pop directional formatting',
    '\u202d': 'left-to-right override',
    '\u202e': 'right-to-left override',
    '\u2066': 'left-to-right isolate',
    '\u2067': 'right-to-left isolate',
    '\u2068': 'first strong isolate',
    '\u2069': 'pop directional isolate',
    '\u00ad': 'soft hyphen',
    '\u200b': 'zero width space',
    '\u2060': 'word joiner',
    '\u2064': 'invisible plus',
    '\ufeff': 'byte order mark',
  };

  it('Was a defect: bidi overrides and isolates, LS/PS and invisible characters reached the terminal raw', async () => {
    // `check` echoed a dependency named `orders\u202e...` raw: the override reversed the rest of the
    // line on the operator's terminal (Trojan Source); U+2028 broke it in some terminals.
    for (const [ch, what] of Object.entries(SPOOF)) {
      const spelled = `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
      expect(escapeControl(`a${ch}b`), what).toBe(`a${spelled}b`);
    }
    // Judgement call (escape.ts): the joiners stay, emoji sequences and Persian/Indic words need them.
    expect(escapeControl('👩\u200d💻 می\u200cخواهم')).toBe('👩\u200d💻 می\u200cخواهم');
    const name = `orders\u202e\u2066evil\u2069\u2028\u200bx`;
    writeFileSync(
      join(dir, 'bidi.yaml'),
      `dependencies:\n  - name: ${JSON.stringify(name)}\n    p99Ms: 100\n`,
    );
    for (const argv of [
      ['check', 'bidi.yaml'],
      ['check', 'bidi.yaml', '--json'],
      ['calibrate', '--p99', '100', '--dependency', name, '--config', 'ok.yaml'],
    ]) {
      const r = await runCli(argv, dir);
      const printed = `${r.out}${r.err}`;
      expect(printed, JSON.stringify(argv)).not.toMatch(/[\u2028\u2029\u200b\u202a-\u202e\u2066-\u2069]/);
      expect(printed, JSON.stringify(argv)).toMatch(/\\u202e/);
    }
  });
});

describe('prazo drill: options (SPEC V2)', () => {
  const base = { config: 'ok.yaml', cwd: dir, independent: ['/a'] };
  const problems = (o: Parameters<typeof resolveDrillOptions>[0]): string[] => {
    try {
      resolveDrillOptions(o);
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidOptionsError);
      return [...(error as InvalidOptionsError).problems];
    }
    return [];
  };

  it('Was a defect: a target with a path, query or credentials was cut to its origin without a word', () => {
    for (const target of [
      'http://127.0.0.1:1/api',
      'http://127.0.0.1:1/api/',
      'http://127.0.0.1:1?x=1',
      'http://127.0.0.1:1#f',
      'http://u:p@127.0.0.1:1',
    ]) {
      expect(problems({ ...base, target }).join('; '), target).toMatch(
        /`target` must be an origin \(scheme, host, port\)/,
      );
    }
    for (const target of ['http://127.0.0.1:1', 'http://127.0.0.1:1/', 'https://[::1]:8443']) {
      expect(problems({ ...base, target }), target).toEqual([]);
    }
    expect(problems({ ...base, target: 'ftp://x' })[0]).toMatch(/must be an http\(s\) URL/);
  });

  it('Was a defect: a route the URL parser rewrites was loaded as another path (CRLF dropped, # cut, .. resolved, spaces encoded)', () => {
    for (const route of [
      '/a b',
      '/a\r\nX: y',
      '/a\tb',
      '/a#frag',
      '/a/../admin',
      '/a\\b',
      '/é',
      '/\u001b[2J',
      '/a?',
      'a',
      '',
    ]) {
      const p = problems({ ...base, target: 'http://127.0.0.1:1', routes: [route] });
      expect(p.join('; '), JSON.stringify(route)).toMatch(
        /`routes\[0\]` must be a (path starting with \/|non-empty string)/,
      );
    }
    for (const route of ['/a%20b', '/%C3%A9', '/a?x=1&y=%2F', '//double', "/a-._~!$&'()*+,;=:@/"]) {
      expect(problems({ ...base, target: 'http://127.0.0.1:1', routes: [route] }), route).toEqual([]);
    }
    // every problem together
    const all = problems({
      target: 'http://h/x',
      independent: ['/ '],
      routes: ['/#'],
      durationS: 0,
      rate: Number.NaN,
      cwd: dir,
      config: 'ok.yaml',
    });
    expect(all).toHaveLength(5);
  });

  it('Was a defect: options the target has no use for were dropped silently (routes on the demo, --naive-timeout off the naive stack, a route on both sides)', async () => {
    expect(problems({ routes: ['/x'] }).join('; ')).toMatch(
      /`routes` and `independent` apply to a `target` only/,
    );
    expect(problems({ independent: ['/x'] }).join('; ')).toMatch(/apply to a `target` only/);
    expect(problems({ naiveTimeoutMs: 500 }).join('; ')).toMatch(
      /`naiveTimeoutMs` applies to the demo target's naive stack only/,
    );
    expect(problems({ ...base, target: 'http://127.0.0.1:1', naiveTimeoutMs: 500 })).toHaveLength(1);
    expect(problems({ ...base, target: 'http://127.0.0.1:1', routes: ['/a', '/b'] })).toEqual([
      'a route cannot both use the dependency and not: "/a"',
    ]);
    expect(problems({ demoStack: 'naive', naiveTimeoutMs: 500 })).toEqual([]);
    await refused(
      ['drill', '--route', '/x', '--independent', '/y'],
      /^prazo drill: `routes` and `independent` apply to a `target` only/,
    );
  });

  it('numbers: NaN, Infinity, -0, huge and fractional ports are problems, all of them at once', () => {
    const p = problems({
      ...base,
      target: 'http://127.0.0.1:1',
      durationS: Number.POSITIVE_INFINITY,
      rate: Number.NaN,
      load: 1e308,
      doublePort: 1.5,
      connections: 0,
      probeTimeoutMs: 10,
      minSuccessPct: 101,
      healthyS: -0.1,
    });
    expect(p.map((s) => s.match(/`(\w+)`/)?.[1]).sort()).toEqual(
      [
        'connections',
        'doublePort',
        'durationS',
        'healthyS',
        'load',
        'minSuccessPct',
        'probeTimeoutMs',
        'rate',
      ].sort(),
    );
    expect(problems({ ...base, target: 'http://127.0.0.1:1', doublePort: -0, healthyS: -0 })).toEqual([]);
    expect(problems({ ...base, target: 'http://127.0.0.1:1', rate: 10_000, load: 2 })[0]).toMatch(
      /`rate` × `load` must be at most 10000/,
    );
  });

  it('the CLI says the drill problems in one line and runs nothing (exit 2)', async () => {
    await refused(
      ['drill', '--target', 'http://127.0.0.1:1/api', '--independent', '/a b', '--config', 'ok.yaml'],
      /^prazo drill: `target` must be an origin .*; `independent\[0\]` must be a path starting with \//,
    );
    await refused(
      ['drill', '--target', 'http://127.0.0.1:1', '--config', 'ok.yaml'],
      /`independent` routes are required with a target/,
    );
    await refused(
      [
        'drill',
        '--target',
        'http://127.0.0.1:1',
        '--independent',
        '/a',
        '--config',
        'ok.yaml',
        '--demo-stack',
        'naive',
      ],
      /`demoStack` applies to the demo target only/,
    );
    await refused(
      [
        'drill',
        '--target',
        'http://127.0.0.1:1',
        '--independent',
        '/a',
        '--config',
        'ok.yaml',
        '--dependency',
        'zz',
      ],
      /`dependency`: "zz" is not in ok\.yaml \(a\)/,
    );
  });

  it('Was a defect: a double port already in use was "prazo: unexpected failure", without the command', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await runCli(
        [
          'drill',
          '--target',
          'http://127.0.0.1:1',
          '--independent',
          '/a',
          '--config',
          'ok.yaml',
          '--double-port',
          String(port),
          '--duration',
          '0.01',
          '--healthy',
          '0',
        ],
        dir,
      );
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toBe(`prazo drill: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('prazo demo/drill: Ctrl-C (interruptible.ts), on the fake clock', () => {
  const context = (): CliContext & { err: string } => {
    const c = {
      err: '',
      exitCode: 0,
      io: {
        stdout: () => {},
        stderr: (s: string) => {
          c.err += s;
        },
        cwd: dir,
      },
    };
    return c;
  };
  const sleep = (clock: FakeClock, ms: number, signal: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = clock.setTimer(resolve, ms);
      signal.addEventListener('abort', () => {
        clock.clearTimer(timer);
        reject(signal.reason);
      });
    });

  it('SIGINT aborts the work, exits 130 with one line, and leaves no SIGINT listener behind', async () => {
    const clock = new FakeClock();
    const c = context();
    const listeners = process.listenerCount('SIGINT');
    let aborted: AbortSignal | undefined;
    const done = runInterruptible(c, 'prazo drill: interrupted', async (signal) => {
      aborted = signal;
      await sleep(clock, 60_000, signal);
      c.exitCode = 0;
    });
    expect(process.listenerCount('SIGINT')).toBe(listeners + 1);
    clock.advance(1_000);
    process.emit('SIGINT');
    await done;
    expect(aborted?.aborted).toBe(true);
    expect([c.exitCode, c.err]).toEqual([INTERRUPTED, 'prazo drill: interrupted\n']);
    expect(process.listenerCount('SIGINT')).toBe(listeners);
    // a later SIGINT reaches nothing of it
    process.emit('SIGINT');
    expect(c.err).toBe('prazo drill: interrupted\n');
  });

  it('work that ends before any SIGINT: its exit code, no message, no listener; failures: usage error or rethrown', async () => {
    const clock = new FakeClock();
    const listeners = process.listenerCount('SIGINT');
    const c = context();
    const done = runInterruptible(c, 'x', async (signal) => {
      await sleep(clock, 5_000, signal);
      c.exitCode = 1;
    });
    await clock.advanceAsync(5_000);
    await done;
    expect([c.exitCode, c.err]).toEqual([1, '']);
    expect(process.listenerCount('SIGINT')).toBe(listeners);
    let closed = 0;
    await expect(
      runInterruptible(
        c,
        'x',
        async () => {
          throw new InvalidOptionsError('prazo drill', ['`rate` a', '`load` b']);
        },
        () => void closed++,
      ),
    ).rejects.toThrow(/^`rate` a; `load` b$/);
    await expect(
      runInterruptible(c, 'x', async () => Promise.reject(new RangeError('boom'))),
    ).rejects.toThrow('boom');
    expect([closed, process.listenerCount('SIGINT')]).toEqual([1, listeners]);
  });
});
