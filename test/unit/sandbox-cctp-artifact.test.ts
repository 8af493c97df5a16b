import { readFileSync } from 'node:fs';
import { toFunctionSignature, toEventSignature, type AbiEvent, type AbiFunction } from 'viem';
import { describe, expect, it } from 'vitest';
import { MESSAGE_TRANSMITTER_V2_ABI, TOKEN_MESSENGER_V2_ABI } from '../../src/signing/evm/cctp-abi.ts';
import { compileSandboxCctp, SANDBOX_CCTP_ARTIFACT } from '../../src/sandbox/evm/compile-sandbox-cctp.ts';

type Item = AbiFunction | AbiEvent;
const signatures = (abi: readonly unknown[]) =>
  (abi as Item[])
    .filter((e) => e.type === 'function' || e.type === 'event')
    .map((e) =>
      e.type === 'function'
        ? `${toFunctionSignature(e)}:${e.outputs.map((o) => o.type).join(',')}`
        : `${toEventSignature(e)}:${e.inputs.map((i) => (i.indexed ? 'i' : '-')).join('')}`,
    );

describe('the sandbox CCTP contracts artifact', () => {
  // One compile for every check.
  const compiled = compileSandboxCctp();

  it('is what SandboxCctp.sol compiles to today (recompile: node src/sandbox/evm/compile-sandbox-cctp.ts)', () => {
    const committed = JSON.parse(readFileSync(SANDBOX_CCTP_ARTIFACT, 'utf8')) as unknown;
    expect(compiled).toEqual(committed);
  });

  it('declares every function and event of Circle’s ABIs the worker uses, with the same types, outputs and indexing', () => {
    const messenger = signatures(compiled.messenger.abi);
    for (const s of signatures(TOKEN_MESSENGER_V2_ABI)) expect(messenger).toContain(s);
    const transmitter = signatures(compiled.transmitter.abi);
    for (const s of signatures(MESSAGE_TRANSMITTER_V2_ABI)) expect(transmitter).toContain(s);
  });
});
