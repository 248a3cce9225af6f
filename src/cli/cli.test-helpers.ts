import { run } from './main.js';

/** Runs the CLI in-process and captures what it prints. */
export async function runCli(
  argv: string[],
  cwd?: string,
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(argv, {
    stdout: (s) => {
      out += s;
    },
    stderr: (s) => {
      err += s;
    },
    cwd: cwd ?? new URL('../../examples/', import.meta.url).pathname,
  });
  return { code, out, err };
}
