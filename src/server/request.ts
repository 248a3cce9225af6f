import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deadline } from '../deadline/deadline.js';
import type { DeadlineSource, IncomingDeadline } from '../deadline/headers.js';
import { DeadlineExceededError } from '../errors/deadline.js';
import { admittedHookOf } from './admitted.js';
import { CLIENT_DISCONNECT_MESSAGE } from './constants.js';
import type { ServerEvent } from './events.js';
import type { ResolvedServerOptions } from './options.js';
import { writeExpired } from './respond.js';

/** What a request carries once admitted. */
export interface RequestDeadline {
  /** The request's deadline, already capped by the local maximum (SPEC D2). */
  readonly deadline: Deadline;
  /**
   * Aborts when the deadline passes (reason: DeadlineExceededError) or when the client goes away
   * before the response is sent (reason: an `AbortError` DOMException). Pass it to downstream calls.
   */
  readonly signal: AbortSignal;
  /** How the deadline was decided. */
  readonly incoming: IncomingDeadline;
}

/**
 * Admits one request (SPEC D2, D3, D7): reads its deadline, answers 504 at once when it is already
 * gone (through `rejectExpired`, default a raw 504 JSON answer; returns `undefined`: the handler
 * must not run), and otherwise arms the request's signal.
 *
 * Cost per request: one timer (unref'd, cleared when the response finishes) and two `once`
 * listeners on the response, both removed by its `close`. No `AbortSignal.any`, nothing left behind.
 * The client disconnect is read from the *response's* `close` while it is not finished: on Node 20
 * the request's own `close` fires as soon as its body has been read, which is not a disconnect.
 */
export function admitRequest(
  options: ResolvedServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  rejectExpired: (source: DeadlineSource) => void = (source) => writeExpired(res, source),
): RequestDeadline | undefined {
  const incoming = options.read(req.headers);
  const hook = admittedHookOf(options.events);
  if (hook !== undefined) {
    try {
      hook(incoming, incoming.deadline.remainingMsAt(options.clock.now(), options.clock));
    } catch (error) {
      process.emitWarning(`prazo: a server trace hook threw: ${String(error)}`, 'PrazoWarning');
    }
  }
  const method = req.method ?? 'GET';
  const emit = (event: ServerEvent): void => {
    options.onEvent?.(event);
    if (options.events.active) options.events.emit(event);
  };
  if (incoming.expired) {
    rejectExpired(incoming.source);
    emit({ type: 'rejected-expired', framework: options.framework, method, source: incoming.source });
    return undefined;
  }

  const { clock, framework } = options;
  const { deadline, source } = incoming;
  const started = clock.now();
  const budgetMs = deadline.at - started;
  const controller = new AbortController();
  let timer: ReturnType<typeof clock.setTimer> | undefined;

  const onDeadline = (): void => {
    timer = undefined;
    controller.abort(
      new DeadlineExceededError({ elapsedMs: clock.now() - started, deadlineEpochMs: deadline.epochMs() }),
    );
    emit({
      type: 'cancelled',
      framework,
      method,
      source,
      reason: 'deadline',
      elapsedMs: clock.now() - started,
    });
  };
  const stopTimer = (): void => {
    if (timer !== undefined) clock.clearTimer(timer);
    timer = undefined;
  };
  const onFinish = (): void => {
    stopTimer();
    const now = clock.now();
    const overrunMs = Math.max(0, now - deadline.at);
    const base = { framework, method, source, statusCode: res.statusCode, elapsedMs: now - started };
    emit({ type: 'finished', ...base, budgetMs, overrunMs });
    if (overrunMs > 0) emit({ type: 'wasted-work', ...base, overrunMs });
  };
  const onClose = (): void => {
    res.removeListener('finish', onFinish);
    if (res.writableFinished) return;
    stopTimer();
    if (controller.signal.aborted) return;
    controller.abort(new DOMException(CLIENT_DISCONNECT_MESSAGE, 'AbortError'));
    const elapsedMs = clock.now() - started;
    emit({ type: 'cancelled', framework, method, source, reason: 'client-disconnect', elapsedMs });
  };

  timer = clock.setTimer(onDeadline, budgetMs, { unref: true });
  res.once('finish', onFinish);
  res.once('close', onClose);
  if (res.destroyed || res.socket?.destroyed === true) onClose();
  return { deadline, signal: controller.signal, incoming };
}
