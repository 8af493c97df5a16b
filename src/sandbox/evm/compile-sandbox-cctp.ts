import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactText, compileSolidity, type CompiledContract } from './solc-compile.ts';

/**
 * Compiles `SandboxCctp.sol` (the sandbox's MessageTransmitterV2 and TokenMessengerV2) into
 * `SandboxCctp.json`, committed beside the source as SandboxUsdc.json is; a test recompiles and
 * compares. Run `node src/sandbox/evm/compile-sandbox-cctp.ts` after changing the contracts.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
export const SANDBOX_CCTP_ARTIFACT = join(HERE, 'SandboxCctp.json');

export type SandboxCctpArtifact = {
  /** Constructor(uint32 localDomain, address attester). */
  readonly transmitter: CompiledContract;
  /** Constructor(address transmitter, address usdc, address feeRecipient, uint256 remoteDomains). */
  readonly messenger: CompiledContract;
};

export function compileSandboxCctp(): SandboxCctpArtifact {
  const [transmitter, messenger] = compileSolidity(join(HERE, 'SandboxCctp.sol'), [
    'SandboxMessageTransmitterV2',
    'SandboxTokenMessengerV2',
  ]);
  if (!transmitter || !messenger) throw new Error('solc produced no CCTP contracts');
  return { transmitter, messenger };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SANDBOX_CCTP_ARTIFACT, artifactText(compileSandboxCctp()));
  process.stdout.write(`wrote ${SANDBOX_CCTP_ARTIFACT}\n`);
}
