import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';

/** One compiled contract as the sandbox commits it beside its source (SandboxUsdc.json, SandboxCctp.json). */
export type CompiledContract = {
  readonly contractName: string;
  readonly compiler: string;
  readonly abi: readonly unknown[];
  /** Creation code (hex, 0x-prefixed): the constructor's arguments follow it ABI-encoded. */
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

/**
 * Compiles the named contracts of one Solidity file with solc-js (a dev dependency, loaded only
 * here, never at sandbox start-up): optimizer on, cancun, no metadata hash, so the bytecode depends
 * on the source and the compiler only. Imports resolve from node_modules (OpenZeppelin).
 */
export function compileSolidity(sourcePath: string, names: readonly string[]): CompiledContract[] {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { compile(input: string, opts: unknown): string; version(): string };
  const file = basename(sourcePath);
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: readFileSync(sourcePath, 'utf8') } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      metadata: { bytecodeHash: 'none', appendCBOR: false },
      outputSelection: {
        [file]: Object.fromEntries(names.map((n) => [n, ['abi', 'evm.bytecode.object', 'storageLayout']])),
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
  return names.map((name) => {
    const contract = output.contracts?.[file]?.[name];
    if (!contract) throw new Error(`solc produced no ${name}`);
    return {
      contractName: name,
      compiler: `solc-js ${solc.version()}`,
      abi: contract.abi,
      bytecode: `0x${contract.evm.bytecode.object}`,
      storageSlots: Object.fromEntries(contract.storageLayout.storage.map((v) => [v.label, Number(v.slot)])),
    };
  });
}

export function artifactText(artifact: unknown): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}
