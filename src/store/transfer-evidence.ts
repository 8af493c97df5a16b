/*
 * A transfer's evidence (the record's `evidence` field, docs/data-model.md): what the worker saw
 * that decided its fate when it was not simply accepted — a lost answer, a refusal, a chain
 * reading, a deadline passed — each line `<ISO time> <what>`, oldest first. Stored as a JSON list.
 */

/** Lines kept: the newest 50 (a transfer that keeps meeting the same trouble says so in a few). */
export const EVIDENCE_LINES = 50;
/** Longest line kept (a runtime's debug dump can be long; the message around it says what it is). */
export const EVIDENCE_LINE_CHARS = 2_000;

/** The stored list; a field that is missing or not a list of strings (older or foreign code) reads empty. */
export function parseEvidence(stored: string | undefined): string[] {
  if (!stored) return [];
  try {
    const list: unknown = JSON.parse(stored);
    return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

/** A line as it is kept: at most EVIDENCE_LINE_CHARS. */
export function clipEvidenceLine(line: string): string {
  return line.length > EVIDENCE_LINE_CHARS ? `${line.slice(0, EVIDENCE_LINE_CHARS)}…` : line;
}

/**
 * `list` with `line` added at `at` (ms), its newest EVIDENCE_LINES kept: what the stored list holds
 * once the line is appended (transfer-store.ts appendEvidence does it in Redis, in one step).
 */
export function withEvidence(list: readonly string[], at: number, line: string): string[] {
  return [...list, `${new Date(at).toISOString()} ${clipEvidenceLine(line)}`].slice(-EVIDENCE_LINES);
}
