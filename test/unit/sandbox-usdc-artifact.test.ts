import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileSandboxUsdc, SANDBOX_USDC_ARTIFACT } from '../../src/sandbox/evm/compile-sandbox-usdc.ts';

describe('the sandbox USDC token artifact', () => {
  // One compile (1–2 s) for both checks.
  const compiled = compileSandboxUsdc();

  it('is what SandboxUsdc.sol compiles to today (recompile: node src/sandbox/evm/compile-sandbox-usdc.ts)', () => {
    const committed = JSON.parse(readFileSync(SANDBOX_USDC_ARTIFACT, 'utf8')) as unknown;
    expect(compiled).toEqual(committed);
  });

  it('has the ERC-2612 surface the worker reads and the sandbox calls', () => {
    const { abi } = compiled as unknown as { abi: { type: string; name?: string }[] };
    const functions = abi.filter((e) => e.type === 'function').map((e) => e.name);
    for (const name of [
      'permit',
      'nonces',
      'DOMAIN_SEPARATOR',
      'name',
      'version',
      'decimals',
      'balanceOf',
      'transferFrom',
      'mint',
    ])
      expect(functions).toContain(name);
  });
});
