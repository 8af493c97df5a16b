import { describe, expect, it } from 'vitest';
import { splitRuntimeDump } from '../../src/domain/runtime-dump.ts';
import { describeFailure } from '../../src/pipeline/failure.ts';

const DUMP =
  'FailedTransactionMetadata { err: InvalidProgramForExecution, meta: TransactionMetadata { signature: 5Kx…, logs: ["Program CCTPiPYPc6AsJuwueEnWgSgucamXDZwBd53dQ11YiKX3 invoke [1]"], inner_instructions: [], compute_units_consumed: 0, return_data: TransactionReturnData { program_id: 11111111111111111111111111111111, data: [] } } }';

describe('a Solana runtime failure, as a person reads it', () => {
  it('names the error of a debug dump and keeps the dump apart', () => {
    const split = splitRuntimeDump(`the runtime refused the transaction: ${DUMP}`);
    expect(split.text).toBe('the runtime refused the transaction: InvalidProgramForExecution');
    expect(split.dump).toBe(DUMP);
  });

  it('reads the dump LiteSVM writes: wrapped in FailedTransactionMetadata(…), whole or cut', () => {
    const wrapped = `FailedTransactionMetadata(${DUMP})`;
    expect(splitRuntimeDump(`does not have: ${wrapped}`)).toEqual({
      text: 'does not have: InvalidProgramForExecution',
      dump: wrapped,
    });
    expect(splitRuntimeDump(`does not have: ${wrapped.slice(0, 300)}…`).text).toBe(
      'does not have: InvalidProgramForExecution',
    );
  });

  it('reads the short form, an error with arguments, text after the dump and a dump cut short', () => {
    expect(splitRuntimeDump('refused: FailedTransactionMetadata(InvalidProgramForExecution)').text).toBe(
      'refused: InvalidProgramForExecution',
    );
    expect(
      splitRuntimeDump(
        'x: FailedTransactionMetadata { err: InstructionError(0, Custom(1)), meta: M { a: 1 } } (end)',
      ).text,
    ).toBe('x: InstructionError(0, Custom(1)) (end)');
    const cut = `program not found: ${DUMP.slice(0, 90)}…`;
    expect(splitRuntimeDump(cut)).toEqual({
      text: 'program not found: InvalidProgramForExecution',
      dump: cut.slice('program not found: '.length),
    });
    expect(splitRuntimeDump('FailedTransactionMetadata { meta: cut').text).toBe('a runtime error');
    expect(splitRuntimeDump('nothing to see').dump).toBeUndefined();
  });

  it('reads a long hostile text into a short reason', () => {
    // How long it takes (linear in the text: twice the text, about twice the time) is the bench's
    // figure (`BENCH_ONLY=responsiveness npm run bench`, BENCHMARKS.md section 10), not a timed test.
    const text = `FailedTransactionMetadata { err: ${'('.repeat(200_000)}`;
    expect(splitRuntimeDump(text).text.length).toBeLessThan(200);
  });

  it('gives the worker a failure reason that names the error, not the start of the dump', () => {
    const said = describeFailure({
      kind: 'rejected',
      httpStatus: 400,
      serviceCode: 'transaction_failed',
      serviceMessage: `the runtime refused the transaction: ${DUMP.slice(0, 260)}…`,
      message: 'x',
    });
    expect(said).toBe(
      'rejected: HTTP 400: transaction_failed: the runtime refused the transaction: InvalidProgramForExecution',
    );
  });
});
