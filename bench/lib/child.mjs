import { spawn } from 'node:child_process';

/**
 * Process-per-variant runner. Every measured variant runs in a fresh Node process, so one variant's JIT
 * state, garbage and open sockets cannot tax the next one. A child reports with one line on stdout:
 * `RESULT_MARK` followed by JSON (see {@link report}); anything else it prints is kept for diagnostics.
 */

export const RESULT_MARK = '@@prazo-bench ';

/** The env var by which a child knows its parent's pid (set by {@link runChild} and {@link startChild}). */
const PARENT_ENV = 'PRAZO_BENCH_PARENT';

// A child whose parent is gone (killed, crashed, its terminal closed) exits instead of running on:
// a load generator orphaned that way was seen spinning at 50% CPU for an hour. Linux re-parents an
// orphan (to init or a subreaper), so a changed ppid is the signal; the check is unref'd and never
// keeps a child alive by itself.
//
// The first signal is the IPC channel every child is started with: it closes the instant the parent
// process goes, however it went, so the child exits at once. The channel is unref'd, so it never
// keeps a child alive by itself. The ppid check stays for a child started without it.
const parent = Number(process.env[PARENT_ENV]);
if (parent > 0 && parent !== process.pid) {
  if (process.channel !== undefined) {
    process.once('disconnect', () => process.exit(70));
    process.channel.unref();
  }
  const watch = setInterval(() => {
    if (process.ppid !== parent) process.exit(70);
  }, 500);
  watch.unref();
}

/** stdin ignored, stdout and stderr read, and an IPC channel whose end tells the child its parent left. */
const STDIO = ['ignore', 'pipe', 'pipe', 'ipc'];

function childEnv(env) {
  return { ...(env ?? process.env), [PARENT_ENV]: String(process.pid) };
}

/** Called by a child: prints its result where the parent looks for it. */
export function report(result) {
  process.stdout.write(`${RESULT_MARK}${JSON.stringify(result)}\n`);
}

/**
 * Runs `node [nodeArgs] script [args]` and resolves with the JSON the child reported. Rejects when the
 * child exits non-zero, reports nothing, or outlives `timeoutMs` (then it is killed, by its own pid).
 */
export function runChild(script, args = [], { nodeArgs = [], timeoutMs = 120_000, env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
      stdio: STDIO,
      env: childEnv(env),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')}: no result after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
      if (code !== 0 || line === undefined) {
        const why = signal ? `signal ${signal}` : `exit code ${code}`;
        reject(new Error(`${script} ${args.join(' ')}: ${why}\n${tail(stderr || stdout)}`));
        return;
      }
      try {
        resolve(JSON.parse(line.slice(RESULT_MARK.length)));
      } catch (error) {
        reject(new Error(`${script}: unreadable result: ${String(error)}`));
      }
    });
  });
}

/**
 * Starts a long-lived child (the loopback server) and resolves once it reported its first result
 * (its port); `stop()` ends it by its own pid and waits for it to exit.
 */
export function startChild(script, args = [], { timeoutMs = 20_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      stdio: STDIO,
      env: childEnv(),
    });
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script}: did not start in ${timeoutMs} ms\n${tail(stderr)}`));
    }, timeoutMs);
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise((done) => child.on('close', done));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.stdout.setEncoding('utf8').on('data', (d) => {
      buffer += d;
      const line = buffer.split('\n').find((l) => l.startsWith(RESULT_MARK));
      if (line === undefined) return;
      clearTimeout(timer);
      const info = JSON.parse(line.slice(RESULT_MARK.length));
      const stop = async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      };
      resolve({ info, stop, pid: child.pid });
    });
  });
}

function tail(text, lines = 15) {
  return text.trim().split('\n').slice(-lines).join('\n');
}
