/**
 * Writes a run sent and did not wait for, because its caller ends the job with one more write of its
 * own (the job's step log: src/queue/transfer-processor.ts): awaited together, the two reach Redis
 * in one round trip, the client sending the commands of one turn of the event loop in one write
 * (`enableAutoPipelining`). The caller awaits `settled()` before the job ends, so the queue never
 * hears a job is done while a write of its run is unanswered; a run without such a caller awaits
 * each write where it is made (Ctx.deferred absent).
 */
export type DeferredWrites = {
  add(write: Promise<unknown>): void;
  /** Resolves once every write added so far is answered; rejects with the first that failed. */
  settled(): Promise<void>;
};

export function deferredWrites(): DeferredWrites {
  const writes: Promise<unknown>[] = [];
  return {
    add(write) {
      // A failure waits for settled(): never an unhandled rejection while the run goes on.
      write.catch(() => {});
      writes.push(write);
    },
    async settled() {
      await Promise.all(writes.splice(0));
    },
  };
}
