import { loadConfig } from '../../src/config/load-config.ts';
import { createChainReader } from '../../src/signing/evm/chain-reader.ts';
import { cpuSpent, readCpu } from '../lib/process-cpu.ts';
import type { Context } from './throughput.ts';

/**
 * The on-chain read of section 2 alone: USDC's `isBlacklisted` of many distinct addresses, as many
 * in flight as the worker's runs, made by the worker's own reader (src/signing/evm/chain-reader.ts)
 * through the sandbox's RPC, with nothing else running. Its CPU per read, by process: the reader
 * (this bench process), the sandbox (the RPC node's HTTP hop) and anvil (the chain's calls).
 */
export type OnchainReadsResult = {
  readonly reads: number;
  readonly inFlight: number;
  readonly perSecond: number;
  readonly cpuMsPerRead: { readonly reader: number; readonly sandbox: number; readonly anvil: number };
};

const CHAIN = 'BASE';

/** A distinct address per read, none of them blacklisted. */
const addressOf = (i: number): string => `0x${(0xb1ac0000 + i).toString(16).padStart(40, '0')}`;

export async function benchOnchainReads(
  ctx: Context,
  p: { reads: number; inFlight: number },
): Promise<OnchainReadsResult> {
  const reader = createChainReader({
    config: loadConfig({ [`EVM_RPC_URL_${CHAIN}`]: ctx.sandbox.rpc[CHAIN] }),
  });
  const readAll = async (n: number, offset: number): Promise<void> => {
    let next = 0;
    const one = async (): Promise<void> => {
      while (next < n) {
        const i = next++;
        if ((await reader.usdcBlacklisted(CHAIN, addressOf(offset + i))) !== false)
          throw new Error(`${addressOf(offset + i)} read as blacklisted`);
      }
    };
    await Promise.all(Array.from({ length: p.inFlight }, one));
  };
  await readAll(Math.min(1_000, p.reads), 10_000_000);
  const processes = { workers: [], sandbox: ctx.sandbox.child.pid, redis: [] };
  const before = readCpu(processes);
  await readAll(p.reads, 0);
  const spent = cpuSpent(before, readCpu(processes), p.reads);
  const result = {
    reads: p.reads,
    inFlight: p.inFlight,
    perSecond: p.reads / (spent.wallMs / 1000),
    cpuMsPerRead: {
      reader: spent.ms.bench / p.reads,
      sandbox: spent.ms.sandbox / p.reads,
      anvil: spent.ms.anvil / p.reads,
    },
  };
  ctx.log(
    `on-chain reads alone: ${result.perSecond.toFixed(0)}/s; CPU ms a read: reader ${result.cpuMsPerRead.reader.toFixed(3)}, sandbox ${result.cpuMsPerRead.sandbox.toFixed(3)}, anvil ${result.cpuMsPerRead.anvil.toFixed(3)}`,
  );
  return result;
}
