/**
 * Runs `fn` over the items with at most `lanes` at a time, in order of the items. After a failure
 * the lanes take no new item; the first failure is thrown once every lane has stopped (so nothing
 * is still running when the caller sees it).
 */
export async function inLanes<T>(
  items: readonly T[],
  lanes: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (next < items.length && !failed) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const settled = await Promise.allSettled(
    Array.from({ length: Math.min(lanes, Math.max(1, items.length)) }, lane),
  );
  const rejected = settled.find((s) => s.status === 'rejected');
  if (rejected) throw rejected.reason;
}
