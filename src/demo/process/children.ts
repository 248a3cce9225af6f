import { type ChildProcess, fork } from 'node:child_process';
import type { Clock } from '../../clock/clock.js';
import type { TracePiece } from '../trace/types.js';
import type { ChildMessage, ParentMessage, ResetRequest, ServiceConfig, ServiceReport } from '../types.js';

/**
 * The demo's service processes, seen from the parent. Every child is tracked from the moment it is
 * forked until it has exited, and every way out kills them all:
 * - `stopAll()` (the normal end, and what callers run in `finally` on a failure or an abort):
 *   SIGTERM, then SIGKILL after a grace period;
 * - the parent's `exit` event (a crash, `process.exit`, an unhandled error): SIGKILL, synchronously;
 * - the parent dying without running any of that (SIGKILL): children watch their IPC channel and
 *   exit on `disconnect` (see `child.ts`).
 * Children ignore SIGINT (a Ctrl-C reaches the whole process group): the parent decides.
 */

export interface Child {
  readonly name: string;
  readonly pid: number;
  /** Last lines the child wrote on stderr, for error messages. */
  stderr(): string;
}

interface Tracked extends Child {
  readonly process: ChildProcess;
  exited: boolean;
}

export interface ProcessGroupOptions {
  readonly entry: string;
  readonly clock: Clock;
  /** How long a child may take to boot, start and report. */
  readonly timeoutMs: number;
  /** Between SIGTERM and SIGKILL. */
  readonly killGraceMs: number;
}

const STDERR_KEEP = 4_096;

export class ProcessGroup {
  readonly #options: ProcessGroupOptions;
  readonly #children = new Set<Tracked>();
  #nextId = 1;
  readonly #onExit = (): void => {
    for (const child of this.#children) if (!child.exited) child.process.kill('SIGKILL');
  };

  constructor(options: ProcessGroupOptions) {
    this.#options = options;
    process.on('exit', this.#onExit);
  }

  /** PIDs of children not yet known to have exited. */
  pids(): number[] {
    return [...this.#children].filter((c) => !c.exited).map((c) => c.pid);
  }

  /** Forks one service process and waits until it has booted. */
  async spawn(name: string): Promise<Child> {
    const proc = fork(this.#options.entry, [], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      execArgv: [],
      serialization: 'json',
    });
    let stderr = '';
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEEP);
    });
    const child: Tracked = {
      name,
      pid: proc.pid ?? -1,
      process: proc,
      exited: false,
      stderr: () => stderr.trim(),
    };
    this.#children.add(child);
    proc.once('exit', () => {
      child.exited = true;
    });
    proc.on('error', () => {}); // reported by #await (a fork that failed, a send to a dead child)
    await this.#await(child, 'boot', (m) => (m.type === 'booted' ? true : undefined));
    return child;
  }

  /** Starts the service in a booted child; resolves with its port. */
  start(child: Child, config: ServiceConfig): Promise<number> {
    this.#send(child, { type: 'start', config });
    return this.#await(child as Tracked, 'start', (m) => (m.type === 'ready' ? m.port : undefined));
  }

  /** Asks a child for its measurements. */
  report(child: Child, full = false): Promise<ServiceReport> {
    const id = this.#nextId++;
    this.#send(child, { type: 'report', id, full });
    return this.#await(child as Tracked, 'report', (m) =>
      m.type === 'report' && m.id === id ? m.report : undefined,
    );
  }

  /** Asks a child for the spans it kept this scenario (issue #26: the report's trace waterfall). */
  traces(child: Child): Promise<readonly TracePiece[]> {
    const id = this.#nextId++;
    this.#send(child, { type: 'traces', id });
    return this.#await(child as Tracked, 'send its traces', (m) =>
      m.type === 'traces' && m.id === id ? m.traces : undefined,
    );
  }

  /** Resets a child for the next scenario. */
  reset(child: Child, reset: ResetRequest): Promise<void> {
    const id = this.#nextId++;
    this.#send(child, { type: 'reset', id, reset });
    return this.#await(child as Tracked, 'reset', (m) =>
      m.type === 'reset' && m.id === id ? true : undefined,
    ).then(() => undefined);
  }

  /** Stops some children: SIGTERM, SIGKILL after the grace period; resolves once they have exited. */
  async stop(children: readonly Child[]): Promise<void> {
    const targets = [...this.#children].filter((c) => children.includes(c));
    await Promise.all(targets.map((c) => this.#stop(c)));
    for (const c of targets) this.#children.delete(c);
  }

  /** Stops every child. */
  async stopAll(): Promise<void> {
    await this.stop([...this.#children]);
  }

  /** Stops the children and unhooks the group from the parent's `exit` event. */
  async close(): Promise<void> {
    await this.stopAll();
    process.off('exit', this.#onExit);
  }

  #stop(child: Tracked): Promise<void> {
    const { clock, killGraceMs } = this.#options;
    return new Promise<void>((resolve) => {
      if (child.exited) return resolve();
      const timer = clock.setTimer(() => child.process.kill('SIGKILL'), killGraceMs);
      child.process.once('exit', () => {
        clock.clearTimer(timer);
        resolve();
      });
      child.process.kill('SIGTERM');
    });
  }

  #send(child: Child, message: ParentMessage): void {
    const tracked = child as Tracked;
    if (tracked.exited || !tracked.process.connected) throw this.#died(tracked, 'is not running');
    tracked.process.send(message);
  }

  #died(child: Tracked, what: string): Error {
    const stderr = child.stderr();
    return new Error(`demo service ${child.name} (pid ${child.pid}) ${what}${stderr ? `:\n${stderr}` : ''}`);
  }

  /** Waits for the first message `pick` accepts; fails on a `failed` message, an exit or a timeout. */
  #await<T>(child: Tracked, step: string, pick: (m: ChildMessage) => T | undefined): Promise<T> {
    const { clock, timeoutMs } = this.#options;
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clock.clearTimer(timer);
        child.process.off('message', onMessage);
        child.process.off('exit', onExit);
        child.process.off('error', onError);
      };
      const onMessage = (raw: unknown): void => {
        const message = raw as ChildMessage;
        if (message.type === 'failed') {
          done();
          reject(this.#died(child, `failed to ${step}: ${message.message}`));
          return;
        }
        const value = pick(message);
        if (value === undefined) return;
        done();
        resolve(value);
      };
      const onExit = (code: number | null, signal: string | null): void => {
        done();
        reject(this.#died(child, `exited during ${step} (${signal ?? `code ${code}`})`));
      };
      const onError = (error: Error): void => {
        done();
        reject(this.#died(child, `could not ${step}: ${error.message}`));
      };
      const timer = clock.setTimer(() => {
        done();
        reject(this.#died(child, `did not ${step} within ${timeoutMs} ms`));
      }, timeoutMs);
      child.process.on('message', onMessage);
      child.process.once('exit', onExit);
      child.process.once('error', onError);
      if (child.exited) onExit(child.process.exitCode, child.process.signalCode);
    });
  }
}
