import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { CONFIG_LIMITS, DEFAULT_CONFIG_FILE } from '../../config/constants.js';
import { parseConfigText } from '../../config/document.js';
import { checkConfigFile, readBoundedText } from '../../config/load.js';
import { formatPath, formatProblem } from '../../config/problem.js';
import { exportMesh, MESH_TARGETS, type MeshExport, type MeshTarget } from '../../mesh/export.js';
import { GATEWAY_CHANNELS, type GatewayChannel } from '../../mesh/gateway-api.js';
import { cliContext, ExitCode, UsageError } from '../context.js';
import { replaceFile } from '../files.js';
import { choiceArg } from '../parse-args.js';

/**
 * `prazo export --to gateway-api|istio|linkerd|envoy|grpc`: the config's timeouts, retries, budget
 * and ejection as each system's own resources (SPEC X10), so the mesh and prazo's clients enforce one
 * policy from one reviewed file. With `--out DIR` the files are written there; without it they are
 * printed (YAML documents joined by `---`, so `prazo export --to istio | kubectl apply -f -` works).
 * What the system cannot express goes to stderr as `note:` lines.
 */

interface Flags {
  config: string;
  to?: MeshTarget;
  out?: string;
  channel: GatewayChannel;
  dependency?: string[];
  json?: boolean;
  strict?: boolean;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

export function register(program: Command): void {
  program
    .command('export')
    .description(
      "write the config's timeouts, retries and budget as Gateway API, Istio, Linkerd, Envoy or gRPC service config",
    )
    .option('--config <file>', 'the central config', DEFAULT_CONFIG_FILE)
    .option(
      `--to <target>`,
      `the system to write for: ${MESH_TARGETS.join(', ')}`,
      choiceArg('--to', MESH_TARGETS),
    )
    .option('--out <dir>', 'directory to write the files to (default: print them)')
    .option(
      '--channel <channel>',
      'Gateway API release channel of the installed CRDs: standard, or experimental (retries, retry budget)',
      choiceArg('--channel', GATEWAY_CHANNELS),
      'standard',
    )
    .option('--dependency <name>', 'only this dependency (repeatable)', collect)
    .option('--json', 'print a JSON report: files, their text, the numbers, the notes')
    .option('--strict', "exit 1 on the config's warnings")
    .action((flags: Flags, command: Command) => {
      const context = cliContext(command);
      const { io } = context;
      const { result, warnings } = exportCommand(flags, io.cwd);
      for (const w of warnings) io.stderr(`${w}\n`);
      if (flags.json) {
        io.stdout(`${JSON.stringify(report(result, flags), null, 2)}\n`);
      } else if (flags.out === undefined) {
        io.stdout(joined(result));
      } else {
        for (const f of result.files)
          io.stdout(`wrote ${f.resources} resource(s) to ${join(flags.out, f.name)}: ${f.usage}\n`);
      }
      if (!flags.json) for (const note of result.notes) io.stderr(`note: ${note}\n`);
      if (flags.strict && warnings.length > 0) context.exitCode = ExitCode.warnings;
    });
}

/** Every file's text, in order: YAML files joined as one stream, a single JSON file as is. */
function joined(result: MeshExport): string {
  if (result.files.length === 1) return result.files[0]!.text;
  const json = result.files.every((f) => f.name.endsWith('.json'));
  if (json) {
    // Several service configs: one JSON object by file name.
    const byName: Record<string, unknown> = {};
    for (const f of result.files) byName[f.name] = JSON.parse(f.text);
    return `${JSON.stringify(byName, null, 2)}\n`;
  }
  return result.files.map((f) => f.text).join('---\n');
}

function report(result: MeshExport, flags: Flags) {
  return {
    target: result.target,
    config: flags.config,
    out: flags.out ?? null,
    files: result.files,
    policies: result.policies,
    notes: result.notes,
  };
}

/** Loads, exports and (with `--out`) writes; bad input is a UsageError listing every problem with its line. */
export function exportCommand(
  flags: Flags,
  cwd: string,
): { readonly result: MeshExport; readonly warnings: readonly string[] } {
  if (flags.to === undefined) throw new UsageError(`--to is required: one of ${MESH_TARGETS.join(', ')}`);
  const path = resolve(cwd, flags.config);
  const check = checkConfigFile(path);
  const lines = check.problems.map((p) => formatProblem({ ...p, file: flags.config }));
  if (check.config === undefined) throw new UsageError(`${flags.config} has problems:\n${lines.join('\n')}`);
  const result = exportMesh(check.config, {
    target: flags.to,
    channel: flags.channel,
    ...(flags.dependency === undefined ? {} : { dependencies: flags.dependency }),
    source: flags.config,
  });
  if (result.problems.length > 0) {
    // Located like the loader's problems: the same file, parsed again for the lines.
    const doc = parseConfigText(readBoundedText(path, CONFIG_LIMITS.maxBytes));
    const located = result.problems.map((p) =>
      formatProblem({
        file: flags.config,
        ...doc.locate(p.path),
        key: formatPath(p.path),
        message: p.message,
        severity: 'error',
      }),
    );
    throw new UsageError(`cannot export ${flags.config}:\n${located.join('\n')}`);
  }
  if (flags.out !== undefined) {
    const out = resolve(cwd, flags.out);
    try {
      mkdirSync(out, { recursive: true });
      for (const f of result.files) replaceFile(join(out, f.name), f.text);
    } catch (error) {
      throw new UsageError(`cannot write to ${flags.out}: ${(error as Error).message}`);
    }
  }
  return { result, warnings: lines };
}
