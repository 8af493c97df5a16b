/*
 * Writes docs/configuration.md, the configuration reference, from the declarative tables of
 * src/config/variables.ts: `npm run docs:config`. test/unit/config-reference.test.ts checks that the
 * committed file is what this writes, so the reference cannot drift from the table (and the table
 * cannot drift from what loadConfig reads).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EVM_CHAINS } from '../src/domain/chains.ts';
import { COMPOSE_VARIABLES, CONFIG_VARIABLES, type ConfigVariable } from '../src/config/variables.ts';

/** Where the reference is written, from the repository's root. */
export const REFERENCE_FILE = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

const HEADER = [
  '<!-- Written by `npm run docs:config` from src/config/variables.ts: change that file, then run it.',
  '     test/unit/config-reference.test.ts fails while this file is not what it writes. -->',
  '# Configuration reference',
  '',
  'Environment variables (a `.env` in the working directory is read too; the environment wins). All',
  'of it is validated at start and every problem is reported at once, naming the variable (exit 2).',
  'Secrets are never printed or logged. [`.env.example`](../.env.example) documents each one; a fresh',
  'copy of it is a valid configuration. Every variable the product reads is a row below.',
];

const WHICH_KEYS = [
  '**Which keys a command needs.** `enqueue`, `status`, `export` and the other operator commands need',
  'only Redis. `enqueue --dry-run` also needs the service. `worker` needs the service and at least one',
  'signing key: with the EVM key (and a spender) it takes EVM-source rows, with the Solana key',
  'SOLANA-source rows. There is one queue per source chain and a worker consumes only the queues it',
  'has keys for, so rows of a source whose key lives elsewhere wait `queued` for a worker that has it',
  '— a missing key never turns into a failed payment. No key at all is a configuration error. Only',
  '`worker` (and `demo`, `sandbox`, on throwaway keys) reads a key at all: every other command ignores',
  'the key settings and uses the treasury’s public addresses ([keys.md](keys.md)).',
];

const COMPOSE_INTRO = [
  '## docker-compose.yml’s own variables',
  '',
  'Read by compose from `.env` or the shell, not by the product; empty means the default',
  '([production.md](production.md)).',
];

/** `` `A`, `B` `` (or `` `A` / `B` `` for alternatives), then the chains a `<CHAIN>` name stands for. */
function namesCell(row: ConfigVariable): string {
  const names = row.names.map((n) => `\`${n}\``).join(row.either ? ' / ' : ', ');
  const perChain = row.names.some((n) => n.includes('<CHAIN>'));
  return perChain ? `${names} (${EVM_CHAINS.map((c) => `\`${c}\``).join(', ')})` : names;
}

/** A table cell: a `|` inside it is escaped, as GitHub's tables want. */
function cell(text: string): string {
  return text.replace(/(?<!\\)\|/g, '\\|');
}

function table(rows: readonly ConfigVariable[]): string[] {
  return [
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows.map((r) => `| ${cell(namesCell(r))} | ${cell(r.default)} | ${cell(r.meaning)} |`),
  ];
}

/** docs/configuration.md as this table makes it. */
export function renderConfigReference(): string {
  return [
    ...HEADER,
    '',
    ...table(CONFIG_VARIABLES),
    '',
    ...WHICH_KEYS,
    '',
    ...COMPOSE_INTRO,
    '',
    ...table(COMPOSE_VARIABLES),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(REFERENCE_FILE, renderConfigReference());
  process.stdout.write(`wrote ${REFERENCE_FILE}\n`);
}
