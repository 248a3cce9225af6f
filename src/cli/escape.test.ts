import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { runCli } from './cli.test-helpers.js';
import { escapeControl, LINE_REDRAW } from './escape.js';

/**
 * The CLI's output boundary (#24 item 7): text from outside — a Prometheus server's answer, a config
 * file's keys and names, a latency file, the arguments — never reaches the operator's terminal as a
 * control sequence. Each command is driven in-process through `run` with hostile input, and every
 * line it prints is checked for a C0 control character other than `\n` and `\t`, DEL, or a C1.
 */

/** What a terminal would act on: C0 but \n and \t, DEL, C1. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const ESC = '\u001b';
const BEL = '\u0007';
const HOSTILE = `${ESC}[2J${ESC}]0;pwned${BEL}\u009b31m\r`;

/** A string that leans on control characters (C0, DEL, C1), mixed with ordinary text. */
const hostileText = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
      fc.integer({ min: 0x7f, max: 0x9f }).map((c) => String.fromCharCode(c)),
      fc.constantFrom(`${ESC}[2J`, `${ESC}]0;pwned${BEL}`, `${ESC}]52;c;cHduZWQ=${BEL}`, '\r\n', '"', '\\'),
      fc.string({ maxLength: 6 }),
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((parts) => parts.join(''));

const expectNoControl = (r: { out: string; err: string }, what: string): void => {
  for (const [stream, text] of [
    ['stdout', r.out],
    ['stderr', r.err],
  ] as const) {
    const line = text.split('\n').find((l) => CONTROL.test(l));
    expect(line, `${what}: ${stream} line ${JSON.stringify(line)}`).toBeUndefined();
  }
};

let dir: string;
let server: Server;
let prometheus: string;
/** How the stand-in answers the next query. */
let answer: (res: ServerResponse) => void = (res) => res.end();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'prazo-escape-'));
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  prometheus = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const CONFIG =
  'version: 1\ndependencies:\n  - { name: inventory, p99Ms: 85, histogram: { prometheus: {} } }\n';
const fleet = (...more: string[]) => [
  'calibrate',
  '--prometheus',
  prometheus,
  '--config',
  'prazo.config.yaml',
  '--window',
  '2h',
  '--step',
  '1h',
  '--end',
  '1767225600',
  '--timeout',
  '2000',
  ...more,
];

describe('escapeControl', () => {
  it('property: the result holds no control character but \\n and \\t; undoing the escapes gives the text back', () => {
    fc.assert(
      fc.property(hostileText, (raw) => {
        const text = raw.replaceAll('\\', '/'); // a literal backslash would make the reading ambiguous
        const shown = escapeControl(text);
        expect(CONTROL.test(shown)).toBe(false);
        const undone = shown.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) =>
          String.fromCharCode(Number.parseInt(hex, 16)),
        );
        expect(undone).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('writes each as \\uXXXX; keeps \\n and \\t; lets through only the exact sequence asked to keep', () => {
    expect(escapeControl(`a${ESC}[2Jb${BEL}\u009b\u007f\n\tc`)).toBe(
      'a\\u001b[2Jb\\u0007\\u009b\\u007f\n\tc',
    );
    expect(escapeControl(`${LINE_REDRAW}x${ESC}[2J\r`, LINE_REDRAW)).toBe(`${LINE_REDRAW}x\\u001b[2J\\u000d`);
  });
});

describe('no command prints a control character from outside (#24 item 7)', () => {
  it('a hostile Prometheus: its error body, its error text and its warnings reach stderr and stdout escaped', async () => {
    writeFileSync(join(dir, 'prazo.config.yaml'), CONFIG);
    answer = (res) => {
      res.statusCode = 503;
      res.end(`down ${HOSTILE}`);
    };
    const body = await runCli(fleet(), dir);
    expect(body.code).toBe(2);
    expect(body.err).toContain('\\u001b[2J\\u001b]0;pwned\\u0007');
    expectNoControl(body, 'an HTTP 503 body');
    answer = (res) => {
      res.statusCode = 422;
      res.end(JSON.stringify({ status: 'error', errorType: `x${ESC}[2J`, error: HOSTILE }));
    };
    expectNoControl(await runCli(fleet(), dir), 'an API error');
    answer = (res) =>
      res.end(
        JSON.stringify({
          status: 'success',
          warnings: [HOSTILE],
          data: { resultType: 'matrix', result: [{ metric: { le: HOSTILE }, values: [[1767222000, '1']] }] },
        }),
      );
    const label = await runCli(fleet(), dir);
    expect(label.err).toMatch(/no valid `le` label/);
    expectNoControl(label, 'a label');
    answer = (res) =>
      res.end(
        JSON.stringify({
          status: 'success',
          warnings: [HOSTILE],
          data: { resultType: 'matrix', result: [] },
        }),
      );
    const table = await runCli(fleet(), dir);
    expectNoControl(table, 'a warning, as a table');
    const json = await runCli(fleet('--json'), dir);
    expectNoControl(json, 'a warning, as JSON');
    JSON.parse(json.out); // still JSON
  });

  it('escaped output reads back the same: --json as JSON, export YAML as YAML', async () => {
    // The bidi controls, LS/PS and invisible characters too: the CLI spells them `\u…`, so
    // `prazo export` writes a string holding one double-quoted, where that spelling reads back (a
    // name holding only those was written plain: its `\u202e` read back as six characters).
    for (const name of [
      `inv${ESC}[2J\u009b\u007f\u0085\u202e\u2066\u2028\u200b\ufeff\u00ad`,
      'inv\u202eyrot\u2066x\u2069\u200bz',
    ]) {
      writeFileSync(
        join(dir, 'named.yaml'),
        stringify({ dependencies: [{ name, p99Ms: 10, mesh: { service: 'inventory' } }] }),
      );
      const yaml = await runCli(['export', '--config', 'named.yaml', '--to', 'istio'], dir);
      expect(yaml.code).toBe(0);
      expectNoControl(yaml, 'export YAML');
      expect(yaml.out).not.toMatch(/[\u202e\u2066\u2069\u200b]/);
      const docs = parseAllDocuments(yaml.out).map(
        (d) => d.toJS() as { metadata: { annotations: Record<string, string> } },
      );
      expect(docs[0]!.metadata.annotations['prazo/dependency']).toBe(name);
      const json = await runCli(['export', '--config', 'named.yaml', '--to', 'istio', '--json'], dir);
      expectNoControl(json, 'export JSON');
      expect(JSON.parse(json.out).policies[0].dependency).toBe(name);
    }
  });

  it('property: whatever the config, latency file, server answer or argument, every line of every command is free of control characters', async () => {
    const targets = ['gateway-api', 'istio', 'linkerd', 'envoy', 'grpc'];
    await fc.assert(
      fc.asyncProperty(
        hostileText,
        hostileText,
        fc.constantFrom(...targets),
        fc.boolean(),
        async (a, b, target, json) => {
          // a config whose name, keys and values come from outside
          const config = stringify({
            version: 1,
            dependencies: [
              { name: a, p99Ms: 85, histogram: { prometheus: {} }, mesh: { service: 'inventory' } },
              { name: 'b', p99Ms: 50, [b]: a },
            ],
            mesh: { namespace: b },
          });
          writeFileSync(join(dir, 'hostile.yaml'), config);
          writeFileSync(join(dir, 'prazo.config.yaml'), CONFIG.replace('inventory', JSON.stringify(a)));
          writeFileSync(join(dir, 'latency.txt'), `${a}\n12\n${b}\n`);
          const more = json ? ['--json'] : [];
          answer = (res) => {
            res.statusCode = 500;
            res.end(a);
          };
          const runs: Array<[string, string[]]> = [
            ['check', ['check', 'hostile.yaml', ...more]],
            ['export', ['export', '--config', 'hostile.yaml', '--to', target, ...more]],
            ['export a valid name', ['export', '--to', target, '--dependency', a, ...more]],
            ['rules', ['rules', '--config', 'hostile.yaml', '--out', 'rules']],
            ['calibrate a file', ['calibrate', '--histogram', 'latency.txt', ...more]],
            ['calibrate a file name', ['calibrate', '--histogram', a]],
            ['calibrate --prometheus', fleet(...more)],
            ['an argument', ['calibrate', '--p99', a]],
            ['an unknown option', [`--${a}`]],
            ['an unknown command', [a]],
          ];
          for (const [what, argv] of runs) expectNoControl(await runCli(argv, dir), what);
        },
      ),
      { numRuns: 40 },
    );
  });
});
