import { AsyncResource } from 'node:async_hooks';

/**
 * Calls to one endpoint sent together while it is busy: when none is in flight, the calls asked for
 * in one turn of the event loop go at its end, together (a run asking about all its owners at once
 * makes one request, not one and then the rest after its answer); the calls asked for while one is
 * in flight wait for an answer and then go in one request, so an idle worker adds no wait and a busy
 * one makes one request where it made many. A request carries at most `max` calls, and `max` waiting
 * go at once, beside those in flight: a full request gains nothing by waiting, and the calls behind
 * it would otherwise wait one round trip for each `max` ahead of them (a worker with 64 runs in flight
 * and `max` 20 read at most 20 per round trip). `send` answers each call of a group on its own; if it
 * throws, every call of the group fails with that error.
 *
 * A group of one call makes its request in its caller's async context (a transfer's trace shows the
 * read it asked for); a group of several in the context the batcher was made in, not in that of
 * whichever caller's turn or answer set it off (a transfer's trace would otherwise show a read made
 * for others as a call of whatever step it was at): make the batcher where no caller's context is
 * current (chain-reader.ts makes its batchers with the reader, not at a first read).
 */
export type Settled<R> =
  { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: unknown };

type Waiting<P, R> = {
  readonly p: P;
  /** Runs `f` in the caller's async context. */
  readonly inCaller: (f: () => void) => void;
  readonly resolve: (r: R) => void;
  readonly reject: (e: unknown) => void;
};

export function batchWhileBusy<P, R>(
  send: (ps: readonly P[]) => Promise<readonly Settled<R>[]>,
  max: number,
): (p: P) => Promise<R> {
  const waiting: Waiting<P, R>[] = [];
  let inFlight = 0;
  let turnEnd: NodeJS.Immediate | undefined;
  // After an answer (`answered`) the calls waiting go at once, whatever else is in flight; at the end
  // of a turn, when nothing is in flight or `max` are waiting.
  const flush = AsyncResource.bind((answered: boolean): void => {
    let now = answered;
    while (waiting.length > 0 && (now || inFlight === 0 || waiting.length >= max)) {
      now = false;
      inFlight++;
      const group = waiting.splice(0, max);
      const sent = () =>
        void sendGroup(send, group).finally(() => {
          inFlight--;
          flush(true);
        });
      if (group.length === 1) (group[0] as Waiting<P, R>).inCaller(sent);
      else sent();
    }
  });
  return (p) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ p, resolve, reject, inCaller: AsyncResource.bind((f: () => void) => f()) });
      turnEnd ??= setImmediate(() => {
        turnEnd = undefined;
        flush(false);
      });
    });
}

async function sendGroup<P, R>(
  send: (ps: readonly P[]) => Promise<readonly Settled<R>[]>,
  group: readonly Waiting<P, R>[],
): Promise<void> {
  let answers: readonly Settled<R>[];
  try {
    answers = await send(group.map((w) => w.p));
  } catch (err) {
    for (const w of group) w.reject(err);
    return;
  }
  group.forEach((w, i) => {
    const a = answers[i];
    if (a === undefined) w.reject(new Error('no answer for this call in its batch'));
    else if (a.ok) w.resolve(a.value);
    else w.reject(a.error);
  });
}
