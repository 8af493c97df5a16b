/*
 * A Solana runtime's failure as a person reads it. The runtime (LiteSVM, and a service that passes
 * its message on) describes a failed transaction with a Rust debug dump —
 * `FailedTransactionMetadata { err: InvalidProgramForExecution, meta: TransactionMetadata { … } }` —
 * hundreds of characters long, so a message cut to a few hundred characters ends in the middle of
 * it without ever saying much. The reason names the error; the dump goes to the evidence or the log.
 */

const DUMP = 'FailedTransactionMetadata';
/** Longest error name kept (`InstructionError(0, Custom(1))` is 30). */
const MAX_NAME = 120;

/** A message with the dump replaced by the error's name, and the dump itself (undefined: none). */
export type RuntimeDumpSplit = { readonly text: string; readonly dump: string | undefined };

/**
 * Replaces a runtime debug dump in `text` by the error it names (`InvalidProgramForExecution`,
 * `InstructionError(0, Custom(1))`), keeping what comes before and after it. The forms LiteSVM
 * writes are read: `FailedTransactionMetadata { err: <error>, meta: … }`, wrapped or not in
 * `FailedTransactionMetadata(…)`, and `FailedTransactionMetadata(<error>)`. A dump cut short (no
 * closing bracket) is replaced to the end of the text. Linear: at most a few passes over it.
 */
export function splitRuntimeDump(text: string): RuntimeDumpSplit {
  const at = text.indexOf(DUMP);
  if (at < 0) return { text, dump: undefined };
  const found = dumpAt(text, at, 0);
  if (!found) return { text, dump: undefined };
  const { close } = found;
  const rest = close < 0 ? '' : text.slice(close + 1);
  return {
    text: `${text.slice(0, at)}${found.name ?? 'a runtime error'}${rest}`,
    dump: text.slice(at, close < 0 ? undefined : close + 1),
  };
}

/** Wrappers unwrapped at most (LiteSVM wraps once). */
const MAX_WRAPS = 3;

/** The dump starting at `at`: the error it names, and where it closes (-1: cut short); undefined: not a dump. */
function dumpAt(
  text: string,
  at: number,
  wraps: number,
): { readonly name: string | undefined; readonly close: number } | undefined {
  let open = at + DUMP.length;
  while (text[open] === ' ') open++;
  const bracket = text[open];
  if (bracket !== '{' && bracket !== '(') return undefined;
  const close = closingIndex(text, open, bracket, bracket === '{' ? '}' : ')');
  if (bracket === '{') return { name: errorName(text, open + 1), close };
  let inner = open + 1;
  while (text[inner] === ' ') inner++;
  if (text.startsWith(DUMP, inner) && wraps < MAX_WRAPS) {
    return { name: dumpAt(text, inner, wraps + 1)?.name, close };
  }
  return { name: wrappedName(text, open, close), close };
}

/** The error a dump names (`err: <name>` right after its opening brace), with its arguments. */
function errorName(text: string, from: number): string | undefined {
  const m = /\s*err: ([A-Za-z_][A-Za-z0-9_]*)/y;
  m.lastIndex = from;
  const found = m.exec(text);
  if (!found?.[1]) return undefined;
  const end = m.lastIndex;
  if (text[end] !== '(') return found[1];
  const close = closingIndex(text, end, '(', ')');
  // Cut before its arguments close: the bare name says enough.
  if (close < 0 || close - end > MAX_NAME) return found[1];
  return `${found[1]}${text.slice(end, close + 1)}`;
}

/** `(InvalidProgramForExecution)` → its content; a long or cut one → the name it starts with. */
function wrappedName(text: string, open: number, close: number): string | undefined {
  const inner = close < 0 ? text.slice(open + 1, open + 1 + MAX_NAME + 1) : text.slice(open + 1, close);
  if (close >= 0 && inner.length <= MAX_NAME && inner.trim() !== '') return inner.trim();
  return /^\s*([A-Za-z_][A-Za-z0-9_]*)/.exec(inner)?.[1];
}

/** Index of the bracket closing the one at `open`, or -1 when the text ends first. */
function closingIndex(text: string, open: number, opening: string, closing: string): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === opening) depth++;
    else if (c === closing && --depth === 0) return i;
  }
  return -1;
}
