import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { waitFor } from '../helpers/cli.ts';
import { jobOutcome } from '../../src/present/transfer-view.ts';
import { failedReasonOf, failsJob, finalFailure } from '../../src/queue/job-outcome.ts';
import { createJobReporter, type JobProgress, type JobReportSink } from '../../src/queue/job-reporter.ts';
import { isSettleJob, roundOfJobId, settleJobName, transferJobName } from '../../src/queue/jobs.ts';
import { transferView } from '../../src/present/transfer-view.ts';
import { parseTransferRecord } from '../../src/store/transfer-record.ts';

const RECORD = {
  id: 'inv-1',
  line: '2',
  from: 'BASE',
  to: 'ARB',
  amount: '125000000',
  recipient: '0x1111111111111111111111111111111111111111',
  state: 'failed',
  attempts: '1',
  fee_total: '135500',
  fee_platform: '125500',
  fee_gas: '10000',
  error_code: 'refused',
  error_message: 'the service refused the transfer: rejected: HTTP 400',
  permit: JSON.stringify({ owner: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', signature: '0xsecret' }),
  updated_at: '1700000000000',
};

describe('job results', () => {
  it('builds the outcome object from the status document’s transfer: its names and forms, nothing else', () => {
    const rec = parseTransferRecord('b1', RECORD);
    if (!rec) throw new Error('record did not parse');
    const o = jobOutcome(rec);
    const v = transferView(rec);
    expect(o).toEqual({
      batch_id: 'b1',
      transfer_id: 'inv-1',
      line: 2,
      state: 'failed',
      intent_id: null,
      intent_status: null,
      tx_hash: null,
      tx_signature: null,
      owner: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      from: 'BASE',
      to: 'ARB',
      amount: '125.00',
      recipient: RECORD.recipient,
      fee: { total: '0.1355', platform: '0.1255', gas: '0.01' },
      attempts: 1,
      error: { code: 'refused', message: RECORD.error_message },
      new_recipient: false,
    });
    for (const k of Object.keys(o)) {
      if (k !== 'batch_id' && k !== 'transfer_id')
        expect(o[k as keyof typeof o]).toEqual(v[k as keyof typeof v]);
    }
    expect(JSON.stringify(o)).not.toContain('0xsecret');
    expect(failedReasonOf(o)).toBe(`failed: refused: ${RECORD.error_message}`);
  });

  it('fails the job for failed, rejected and needs_review only, with an error the queue never retries', () => {
    expect(
      ['submitted', 'queued', 'failed', 'rejected', 'needs_review'].filter((s) => failsJob(s as never)),
    ).toEqual(['failed', 'rejected', 'needs_review']);
    const err = finalFailure('failed: refused: x');
    expect(err.name).toBe('UnrecoverableError');
    expect(err.stack).toBe('');
  });

  it('names jobs by route and amount and reads the round back from any job id', () => {
    expect(transferJobName({ from: 'BASE', to: 'ARB', amount: 125_000_000n })).toBe('BASE→ARB 125.00 USDC');
    expect(transferJobName({ from: 'SOLANA', to: 'ETH', amount: 1_234_567n })).toBe(
      'SOLANA→ETH 1.234567 USDC',
    );
    expect(isSettleJob(settleJobName('BASE→ARB 1.00 USDC'))).toBe(true);
    expect(isSettleJob('settle')).toBe(true);
    expect(isSettleJob('BASE→ARB 1.00 USDC')).toBe(false);
    expect(roundOfJobId('b/t')).toBe(0);
    expect(roundOfJobId('b/t/r3')).toBe(3);
    expect(roundOfJobId('b/t/r2/settle4')).toBe(2);
    expect(roundOfJobId('b/t/settle1')).toBe(0);
  });
});

/** A job and a sink that records what is written to it, as the reporter's script would store it. */
function fakeJob(progress: unknown = 0) {
  const lines: string[] = [];
  const progresses: JobProgress[] = [];
  const writes: number[] = [];
  const job = { id: 'b/t', progress };
  const sink: JobReportSink = async (l, p) => {
    writes.push(l.length);
    lines.push(...l);
    if (p) progresses.push(p);
  };
  return { job, sink, lines, progresses, writes };
}

describe('job reporter', () => {
  const logger = createLogger('silent');
  const at = () => Date.parse('2026-01-02T03:04:05.678Z');

  it('logs a dated line per report, and the step as progress only when it changes', async () => {
    const { job, sink, lines, progresses } = fakeJob();
    const r = createJobReporter(job, sink, logger, at);
    r.report('estimate', 'fee 0.01 USDC');
    await r.flush();
    r.report(null, 'send 1 failed: ambiguous');
    r.report('send', 'send 2 of the same payload');
    await r.flush();
    r.report('send', 'still sending');
    await r.flush();
    r.ended('submitted', 'intent int_1');
    await r.flush();
    expect(lines).toEqual([
      '2026-01-02T03:04:05.678Z estimate: fee 0.01 USDC',
      '2026-01-02T03:04:05.678Z seen: send 1 failed: ambiguous',
      '2026-01-02T03:04:05.678Z send: send 2 of the same payload',
      '2026-01-02T03:04:05.678Z send: still sending',
      '2026-01-02T03:04:05.678Z submitted: intent int_1',
    ]);
    expect(progresses.map((p) => `${p.step} ${p.progress}`)).toEqual([
      'estimate 10',
      'send 60',
      'submitted 100',
    ]);
  });

  it('writes a quick run in one write: every line, and only the newest progress', async () => {
    const { job, sink, lines, progresses, writes } = fakeJob();
    const r = createJobReporter(job, sink, logger, at);
    r.report('estimate', 'a');
    r.report('sign', 'b');
    r.report('send', 'c');
    r.ended('submitted', 'd');
    await r.flush();
    expect(writes).toEqual([4]);
    expect(lines).toHaveLength(4);
    expect(progresses).toEqual([{ step: 'submitted', progress: 100, message: 'd' }]);
  });

  it('logs a wait once while its reason stays the same, also across runs of the job', async () => {
    const first = fakeJob();
    const r1 = createJobReporter(first.job, first.sink, logger, at);
    r1.waiting('waiting for the BASE nonce lease', 200);
    r1.waiting('waiting for the BASE nonce lease', 200);
    await r1.flush();
    expect(first.lines).toEqual([
      '2026-01-02T03:04:05.678Z wait: waiting for the BASE nonce lease (again in 0.2 s)',
    ]);
    // The next run of the job starts from the progress the job was fetched with.
    const again = fakeJob(first.progresses.at(-1));
    const r2 = createJobReporter(again.job, again.sink, logger, at);
    r2.waiting('waiting for the BASE nonce lease', 200);
    r2.waiting('MAX_DAILY_USDC: 40.00 of 50.00 USDC sent', 60_000);
    await r2.flush();
    expect(again.lines).toEqual([
      '2026-01-02T03:04:05.678Z wait: MAX_DAILY_USDC: 40.00 of 50.00 USDC sent (again in 60.0 s)',
    ]);
  });

  it('says a call once, by its answer: its announcing line shows as progress while it lasts, and stays in the log only when no answer came', async () => {
    const { job, sink, lines, progresses } = fakeJob();
    const r = createJobReporter(job, sink, logger, at, 1);
    // Quick: the answer replaces the announcement; an observation between them does not.
    r.report('estimate', 'asking the service for the fee', true);
    r.report('estimate', 'fee 0.01 USDC');
    // Slow: the step's progress goes out with the announcement as its message; the line waits.
    r.report('sign', 'choosing a BASE owner', true);
    r.report(null, 'owner 0xf39F…2266 chosen on BASE');
    await waitFor('the sign step as progress', async () => (progresses.length > 0 ? true : undefined));
    expect(progresses).toEqual([{ step: 'sign', progress: 45, message: 'choosing a BASE owner' }]);
    expect(lines.map((l) => l.slice(25))).toEqual(['estimate: fee 0.01 USDC']);
    r.report('sign', 'permit signed');
    // Handed back before the answer: the announcement stays, the wait after it.
    r.report('build', 'asking the service to build the transaction', true);
    r.waiting('the service answered 503', 2_000);
    // Stopped before the answer (the run's last flush): it stays too.
    r.report('send', 'asking once more', true);
    await r.flush();
    expect(lines.map((l) => l.slice(25))).toEqual([
      'estimate: fee 0.01 USDC',
      'seen: owner 0xf39F…2266 chosen on BASE',
      'sign: permit signed',
      'build: asking the service to build the transaction',
      'wait: the service answered 503 (again in 2.0 s)',
      'send: asking once more',
    ]);
  });

  it('never fails the run when the job log cannot be written', async () => {
    const down: JobReportSink = async () => Promise.reject(new Error('down'));
    const r = createJobReporter({ id: 'b/t', progress: 0 }, down, logger, at);
    r.report('estimate', 'x');
    await expect(r.flush()).resolves.toBeUndefined();
  });
});
