import type { TracePiece } from '../trace/types.js';
import type { ChildMessage, ParentMessage, ResetRequest, ServiceConfig, ServiceReport } from '../types.js';

/** A running service inside a child process. */
export interface RunningService {
  readonly port: number;
  /** `full`: include raw latency samples. */
  report(full: boolean): ServiceReport;
  /** Starts over for the next scenario (see {@link ResetRequest}). */
  reset(request: ResetRequest): Promise<void>;
  /** The spans kept since the last reset (issue #26: `trace/recorder.ts`); none when not recorded. */
  traces?(): TracePiece[];
  close(): Promise<void>;
}

/**
 * The child's half of the protocol in `children.ts`. A child lives only as long as its parent: the
 * IPC channel closing (the parent exited, crashed or was killed) ends it at once, so no service is
 * ever left behind holding a port.
 */
export function serveChild(start: (config: ServiceConfig) => Promise<RunningService>): void {
  const send = process.send?.bind(process);
  if (send === undefined) {
    process.stderr.write('prazo demo service: must be started by the demo (no IPC channel)\n');
    process.exit(2);
  }
  const post = (message: ChildMessage): void => {
    if (process.connected) send(message);
  };
  let service: RunningService | undefined;

  process.on('disconnect', () => process.exit(0));
  // The parent may have died while this process was still loading its modules: the channel closed
  // before anyone listened, and 'disconnect' will not come again.
  if (!process.connected) process.exit(0);
  process.on('SIGINT', () => {}); // the parent handles Ctrl-C and stops us
  process.on('SIGTERM', () => {
    void (service?.close() ?? Promise.resolve()).finally(() => process.exit(0));
  });
  process.on('uncaughtException', (error) => {
    post({
      type: 'failed',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    process.exit(1);
  });

  process.on('message', (raw: unknown) => {
    const message = raw as ParentMessage;
    if (message.type === 'start') {
      start(message.config).then(
        (running) => {
          service = running;
          post({ type: 'ready', port: running.port });
        },
        (error: unknown) => post({ type: 'failed', message: String(error) }),
      );
    } else if (message.type === 'report') {
      if (service === undefined) post({ type: 'failed', message: 'report asked before start' });
      else post({ type: 'report', id: message.id, report: service.report(message.full) });
    } else if (message.type === 'reset') {
      if (service === undefined) post({ type: 'failed', message: 'reset asked before start' });
      else {
        service.reset(message.reset).then(
          () => post({ type: 'reset', id: message.id }),
          (error: unknown) => post({ type: 'failed', message: String(error) }),
        );
      }
    } else if (message.type === 'traces') {
      post({ type: 'traces', id: message.id, traces: service?.traces?.() ?? [] });
    } else if (message.type === 'stop') {
      void (service?.close() ?? Promise.resolve()).finally(() => process.exit(0));
    }
  });
  post({ type: 'booted' });
}
