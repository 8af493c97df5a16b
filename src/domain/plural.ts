/**
 * A count with its noun for people: `1 transfer`, `2 transfers`, `0 transfers`; `many` for a noun
 * whose plural is not the noun and an `s` (`1 address`, `2 addresses`).
 */
export function counted(n: number | bigint, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 || n === 1n ? one : many}`;
}
