import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Compiles `SandboxUsdc.sol` with solc-js (a dev dependency) into the artifact the sandbox loads at
 * start-up (`SandboxUsdc.json`, committed beside the source so start-up never pays the 1–2 s
 * compile). A test recompiles and compares, so the artifact cannot drift from its source. Run
 * `node src/sandbox/evm/compile-sandbox-usdc.ts` after changing the contract to rewrite it.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const SANDBOX_USDC_SOURCE = join(HERE, 'SandboxUsdc.sol');
export const SANDBOX_USDC_ARTIFACT = join(HERE, 'SandboxUsdc.json');

type SandboxUsdcArtifact = {
  readonly contractName: 'SandboxUsdc';
  readonly compiler: string;
  readonly abi: readonly unknown[];
  /** Creation code (hex, 0x-prefixed): constructor(string name, address minter) follows it ABI-encoded. */
  readonly bytecode: `0x${string}`;
  /** Storage slot of each state variable (the mappings' base slots), from solc's storage layout. */
  readonly storageSlots: Readonly<Record<string, number>>;
};

type SolcOutput = {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<
    string,
    Record<
      string,
      {
        abi: unknown[];
        evm: { bytecode: { object: string } };
        storageLayout: { storage: { label: string; slot: string }[] };
      }
    >
  >;
};

export function compileSandboxUsdc(): SandboxUsdcArtifact {
  const require = createRequire(import.meta.url);
  // solc is a CommonJS dev dependency: loaded only here, never at sandbox start-up.
  const solc = require('solc') as { compile(input: string, opts: unknown): string; version(): string };
  const input = {
    language: 'Solidity',
    sources: { 'SandboxUsdc.sol': { content: readFileSync(SANDBOX_USDC_SOURCE, 'utf8') } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      // No metadata hash: the bytecode then depends on the source and compiler only, not on paths.
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: {
        'SandboxUsdc.sol': { SandboxUsdc: ['abi', 'evm.bytecode.object', 'storageLayout'] },
      },
    },
  };
  const findImports = (path: string) => {
    try {
      return { contents: readFileSync(require.resolve(path), 'utf8') };
    } catch {
      return { error: `not found: ${path}` };
    }
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts?.['SandboxUsdc.sol']?.['SandboxUsdc'];
  if (!contract) throw new Error('solc produced no SandboxUsdc');
  return {
    contractName: 'SandboxUsdc',
    compiler: `solc-js ${solc.version()}`,
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    storageSlots: Object.fromEntries(contract.storageLayout.storage.map((v) => [v.label, Number(v.slot)])),
  };
}

function artifactText(artifact: SandboxUsdcArtifact): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(SANDBOX_USDC_ARTIFACT, artifactText(compileSandboxUsdc()));
  process.stdout.write(`wrote ${SANDBOX_USDC_ARTIFACT}\n`);
}
