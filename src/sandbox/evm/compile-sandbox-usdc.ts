import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactText, compileSolidity, type CompiledContract } from './solc-compile.ts';

/**
 * Compiles `SandboxUsdc.sol` into the artifact the sandbox loads at start-up (`SandboxUsdc.json`,
 * committed beside the source so start-up never pays the 1–2 s compile). A test recompiles and
 * compares, so the artifact cannot drift from its source. Run
 * `node src/sandbox/evm/compile-sandbox-usdc.ts` after changing the contract to rewrite it.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
export const SANDBOX_USDC_ARTIFACT = join(HERE, 'SandboxUsdc.json');

/** Constructor(string name, address minter, address cctpMinter). */
export function compileSandboxUsdc(): CompiledContract {
  const [usdc] = compileSolidity(join(HERE, 'SandboxUsdc.sol'), ['SandboxUsdc']);
  if (!usdc) throw new Error('solc produced no SandboxUsdc');
  return usdc;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SANDBOX_USDC_ARTIFACT, artifactText(compileSandboxUsdc()));
  process.stdout.write(`wrote ${SANDBOX_USDC_ARTIFACT}\n`);
}
