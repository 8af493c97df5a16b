import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, ConflictError, UsdcBatchError, ValidationError } from '../domain/errors.ts';
import { BATCH_ID_PATTERN, BATCH_ID_RULE } from '../domain/ids.ts';
import { FourEyesError } from '../ops/ops-error.ts';
import { EXIT } from './exit-codes.ts';
import { endQuietlyOnClosedPipe, followNpmLauncher, isEnding } from './lifetime.ts';
import { plainText } from './format.ts';
import { keepCompiledModules } from './compile-cache.ts';
import type { CommandTracing } from './trace-start.ts';
import { SPAN } from '../trace/attributes.ts';

/** A command module exports `run(args, options)` and returns its exit code. */
type CommandModule = { run: (args: string[], options: Record<string, unknown>) => Promise<number> };

/**
 * Every command of docs/operating.md "The commands" and the module that runs it
 * (`./commands/<name>.ts`), imported when the command runs (so `--help` and light commands start
 * fast), each by its own literal path, which the type checker, lint's layers and tooling follow.
 */
export const COMMANDS: Readonly<Record<string, () => Promise<CommandModule>>> = {
  worker: () => import('./commands/worker.ts'),
  serve: () => import('./commands/serve.ts'),
  enqueue: () => import('./commands/enqueue.ts'),
  status: () => import('./commands/status.ts'),
  batches: () => import('./commands/batches.ts'),
  export: () => import('./commands/export.ts'),
  retry: () => import('./commands/retry.ts'),
  resolve: () => import('./commands/resolve.ts'),
  approve: () => import('./commands/approve.ts'),
  cancel: () => import('./commands/cancel.ts'),
  rebalance: () => import('./commands/rebalance.ts'),
  pause: () => import('./commands/pause.ts'),
  resume: () => import('./commands/resume.ts'),
  schedule: () => import('./commands/schedule.ts'),
  recipients: () => import('./commands/recipients.ts'),
  access: () => import('./commands/access.ts'),
  audit: () => import('./commands/audit.ts'),
  screening: () => import('./commands/screening.ts'),
  wallets: () => import('./commands/wallets.ts'),
  sandbox: () => import('./commands/sandbox.ts'),
  demo: () => import('./commands/demo.ts'),
};

/** Commander's parser of every batch id typed on the command line: a usage error (exit 2) if malformed. */
function batchIdArgument(value: string): string {
  if (!BATCH_ID_PATTERN.test(value)) throw new InvalidArgumentError(`A batch id is ${BATCH_ID_RULE}.`);
  return value;
}

/** The package's version, from its package.json (the checkout's, or the installed package's). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: unknown;
  };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/** Declares commands on the program; a command's action hands its name, arguments and options to `onRun`. */
type Registrar = {
  readonly program: Command;
  def(name: string, description: string): Command;
  bind(cmd: Command, name: string): void;
};

export function buildProgram(
  onRun: (name: string, args: string[], options: Record<string, unknown>) => void,
): Command {
  const program = new Command('usdc-batch')
    .description('Batched USDC payouts through a gasless cross-chain transfer service.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    // Commander quotes what was typed (an unknown option, a bad value): shown with escapes.
    .configureOutput({
      writeErr: (s) => process.stderr.write(plainText(s)),
      writeOut: (s) => process.stdout.write(s),
    })
    .showHelpAfterError('(run usdc-batch --help for usage)');
  const r: Registrar = {
    program,
    def: (name, description) => program.command(name).description(description).exitOverride(),
    bind: (cmd, name) => {
      cmd.action((...all: unknown[]) => {
        const command = all[all.length - 1] as Command;
        onRun(name, command.args, command.opts());
      });
    },
  };
  // In the order `--help` lists them.
  registerProcesses(r);
  registerEnqueue(r);
  registerBatchReads(r);
  registerOperations(r);
  registerSchedule(r);
  registerRecipients(r);
  registerAccess(r);
  registerInspection(r);
  registerSandbox(r);
  return program;
}

/** The long-running processes: `worker` and `serve`. */
function registerProcesses(r: Registrar): void {
  r.bind(r.def('worker', 'run the transfer workers until SIGINT/SIGTERM (graceful)'), 'worker');
  r.bind(r.def('serve', 'run the HTTP API (hook, status, export, metrics, dashboard)'), 'serve');
}

/** `enqueue FILE`. */
function registerEnqueue(r: Registrar): void {
  r.bind(
    r
      .def('enqueue', 'validate a CSV file and enqueue it as one batch')
      .argument('<file>', 'CSV file')
      .option('--batch-id <id>', 'batch id (default: derived from the rows)', batchIdArgument)
      .option('--via <road>', 'the road: service, cctp or cctp-fast (default: TRANSFER_VIA)')
      .option('--skip-invalid', 'enqueue the valid rows and report the rest')
      .option('--allow-duplicates', 'accept rows without id that repeat another payment')
      .option('--expect-rows <n>', 'control total: number of rows')
      .option('--expect-total <amount>', 'control total: sum of amounts (USDC)')
      .option('--dry-run', 'validate and estimate fees; sign and send nothing')
      .option('--wait', 'show progress until the batch is complete, then the summary')
      .option('--json', 'print one JSON document'),
    'enqueue',
  );
}

/** Reading batches back: `status`, `batches`, `export`. */
function registerBatchReads(r: Registrar): void {
  r.bind(
    r
      .def('status', 'show a batch and its transfers')
      .argument('<batch-id>', 'batch id', batchIdArgument)
      .option('--json', 'print the status document')
      .option('--watch', 'refresh until the batch is complete')
      .option('--state <state>', 'only transfers in this state'),
    'status',
  );
  r.bind(r.def('batches', 'list recent batches with their counts').option('--json', 'print JSON'), 'batches');
  r.bind(
    r
      .def('export', 'one row per transfer, with intent ids and outcomes')
      .argument('<batch-id>', 'batch id', batchIdArgument)
      .addOption(new Option('--format <format>', 'csv or json').choices(['csv', 'json']).default('csv'))
      .option('-o, --output <file>', 'write to a file instead of stdout'),
    'export',
  );
}

/** The operator's actions on batches and on processing. */
function registerOperations(r: Registrar): void {
  r.bind(
    r.def('retry', "re-queue a batch's failed transfers").argument('<batch-id>', 'batch id', batchIdArgument),
    'retry',
  );
  r.bind(
    r
      .def('resolve', 'settle a needs_review transfer after checking the chain')
      .argument('<batch-id>', 'batch id', batchIdArgument)
      .argument('<transfer-id>', "the transfer's id (its CSV id, or line-N; see status BATCH_ID)")
      .option('--submitted <intent-id>', 'it was paid: record this intent id')
      .option('--not-sent', 'it was not paid: mark it failed (then retry may send it)'),
    'resolve',
  );
  r.bind(
    r
      .def('approve', 'approve a batch held for approval (four eyes: never its submitter)')
      .argument('<batch-id>', 'batch id', batchIdArgument)
      .option(
        '--digest <digest>',
        'the approval_digest of the rows reviewed (status --json); without it, approve shows the rows and asks',
      ),
    'approve',
  );
  r.bind(
    r
      .def('cancel', "cancel a batch's transfers that have not been sent")
      .argument('<batch-id>', 'batch id', batchIdArgument)
      .option(
        '--transfer <id>',
        'cancel only this unsent transfer (repeatable); the rest of a held batch stays held',
        (id: string, ids: string[] = []) => [...ids, id],
      ),
    'cancel',
  );
  r.bind(
    r
      .def(
        'rebalance',
        "plan and enqueue the moves that bring each chain's treasury back to its policy's target",
      )
      .argument('<policy>', 'policy file (YAML or JSON)')
      .option('--dry-run', 'plan and print; enqueue nothing')
      .option('--check', 'report the chains only; exit 1 when one is below its min')
      .option('--wait', 'wait until the batch is complete')
      .option('--json', 'print one JSON document'),
    'rebalance',
  );
  r.bind(r.def('pause', 'stop all processing'), 'pause');
  r.bind(r.def('resume', 'restart all processing'), 'resume');
}

/** `schedule add|list|remove`. */
function registerSchedule(r: Registrar): void {
  const schedule = r.program.command('schedule').description('recurring batches (add, list, remove)');
  r.bind(
    schedule
      .command('add')
      .description('add or replace a recurring batch')
      .argument(
        '<name>',
        'the schedule name (1-40 of A-Z a-z 0-9 _ -); each firing is batch NAME-YYYYMMDDTHHMMSSZ',
      )
      .requiredOption('--cron <expr>', 'cron expression')
      .option('--file <file>', 'CSV file')
      .option('--rebalance <policy>', 'a rebalancing policy (YAML or JSON), planned afresh at each firing')
      .option(
        '--via <road>',
        'the road of a --file schedule: service, cctp or cctp-fast (default: TRANSFER_VIA)',
      )
      .option('--tz <zone>', 'IANA time zone', 'UTC'),
    'schedule',
  );
  r.bind(schedule.command('list').description('list schedules').option('--json', 'print JSON'), 'schedule');
  r.bind(
    schedule.command('remove').description('remove a schedule').argument('<name>', 'the schedule name'),
    'schedule',
  );
}

/** `recipients list|add|remove|import`: the address book. */
function registerRecipients(r: Registrar): void {
  const recipients = r.program
    .command('recipients')
    .description('the address book of known recipients (list, add, remove, import)');
  r.bind(
    recipients.command('list').description('list the address book').option('--json', 'print JSON'),
    'recipients',
  );
  r.bind(
    recipients
      .command('add')
      .description('add an address (or change its label); a removed address is trusted again')
      .argument('<address>', 'an EVM address (0x…) or a Solana address')
      .option('--label <label>', 'a name for people reading the book'),
    'recipients',
  );
  r.bind(
    recipients
      .command('remove')
      .description('remove an address: payments to it are held until it is added again')
      .argument('<address>', 'the address to remove'),
    'recipients',
  );
  r.bind(
    recipients
      .command('import')
      .description('add the addresses of a CSV file (columns address, label), all or none')
      .argument('<file>', 'CSV file with the columns address and label'),
    'recipients',
  );
}

/** `access token`: a credential of the HTTP API (docs/access.md). */
function registerAccess(r: Registrar): void {
  const access = r.program.command('access').description("the HTTP API's credentials (token)");
  r.bind(
    access
      .command('token')
      .description('a fresh random token (shown once) and its ACCESS_FILE entry (its SHA-256)')
      .argument('<name>', "the credential's name: who the audit shows")
      .option(
        '--role <role>',
        'metrics, viewer, submitter, operator or approver (repeatable)',
        (role: string, roles: string[] = []) => [...roles, role],
      )
      .option('--json', 'print JSON'),
    'access',
  );
}

/** `audit` and `wallets`. */
function registerInspection(r: Registrar): void {
  r.bind(
    r
      .def('audit', 'operator actions: who, when, what; --verify checks an AUDIT_LOG_FILE')
      .option('--batch <id>', 'only this batch', batchIdArgument)
      .option('--verify <file>', "check an AUDIT_LOG_FILE's hash chain; prints the last hash")
      .option('--head <hash>', 'with --verify: a hash the chain must reach (one kept or logged earlier)')
      .option('--json', 'print JSON'),
    'audit',
  );
  r.bind(
    r
      .def('wallets', "the server wallets' public addresses (every EVM owner), balances and permit nonces")
      .option('--json', 'print JSON'),
    'wallets',
  );
  r.bind(
    r
      .def(
        'screening',
        'the sanctions lists in force; check ADDRESS… gives each verdict (exit 1 when listed)',
      )
      .argument('[check]', 'check: screen the addresses that follow')
      .argument('[address...]', 'addresses to check')
      .option('--json', 'print JSON'),
    'screening',
  );
}

/** What `sandbox --help` says of the admin routes (docs/sandbox.md "Admin routes"). */
const SANDBOX_ADMIN_HELP = [
  '',
  'Admin routes, for drills (loopback only; JSON bodies; docs/sandbox.md):',
  '  GET/POST /__admin/config  faults, latency, a lagging RPC, bad Solana txs',
  '  GET /__admin/balances?address=A  on-chain USDC of A; funds no one',
  '  POST /__admin/balance     {"chain","address","amount"}: set a USDC balance',
  '                            (a drained chain: docs/rebalancing.md uses it)',
  '  POST /__admin/outside-permit  {"chain","owner","count"}: use an owner\'s',
  '                            next nonces as a signer elsewhere would',
  '  POST /__admin/bump-nonce  {"chain","owner","by"}: the same, counted in "by"',
  '  POST /__admin/blacklist  {"chain","address"}: USDC blacklists an EVM address',
  '                            on that chain (/__admin/unblacklist lifts it)',
  '  POST /__admin/freeze      {"address"}: freeze a Solana wallet\'s USDC account',
  '                            (/__admin/thaw thaws it)',
  '  POST /__admin/intent-status  {"intent_id","status"}: force an intent\'s status',
  '  GET /__admin/ledger       what executed, with its transactions',
  '  GET /__admin/requests     when each request arrived',
  '  GET/POST /__admin/native-balance  {"chain","address","wei"}: native gas',
  '                            of an EVM address (an owner that cannot pay)',
  '  POST /__admin/reset       revert every chain to its start',
  'CCTP v2 (docs/sandbox.md "CCTP v2"): Circle\'s attestation API at /cctp',
  "  (CCTP_API_URL), its contracts at Circle's testnet addresses on every chain",
  'e.g.: curl -XPOST http://127.0.0.1:8787/__admin/balance \\',
  '        -d \'{"chain":"SOLANA","address":"<SOLANA_ADDRESS>","amount":"200"}\'',
].join('\n');

/** `sandbox` and `demo`: the service's simulator and the whole thing on defaults. */
function registerSandbox(r: Registrar): void {
  r.bind(
    r
      .def(
        'sandbox',
        "run the project's strict sandbox of the transfer service on local chains (anvil, LiteSVM)",
      )
      .option('--port <n>', 'port', '8787')
      .option('--host <host>', 'address to listen on', '127.0.0.1')
      .option('--api-key <key>', 'the API key it accepts')
      .addOption(
        new Option(
          '--network <network>',
          'testnet only: mainnet is refused (nothing it makes may be valid on a real chain)',
        )
          .choices(['testnet', 'mainnet'])
          .default('testnet'),
      )
      .option('--latency <ms>', 'added latency per call')
      .option('--redis', 'also start a private, durable redis-server (from PATH) for this run')
      .option(
        '--write-env <file>',
        'write the environment, throwaway keys and throwaway HOOK_TOKEN and METRICS_TOKEN to FILE for other terminals (removed on exit)',
      )
      .option(
        '--metrics-token-file <file>',
        'with --write-env: write that METRICS_TOKEN alone to FILE, readable by all, for a Prometheus (role metrics only; removed on exit)',
      )
      .addHelpText('after', SANDBOX_ADMIN_HELP),
    'sandbox',
  );
  r.bind(
    r.def('demo', 'the whole thing on embedded defaults: Redis, sandbox, worker, a sample batch'),
    'demo',
  );
}

/**
 * The CLI as a process (bin/usdc-batch.js): a closed stdout or stderr ends it quietly (exit 0), a
 * parent npm that was killed ends it as SIGTERM would (cli/lifetime.ts); then `main`.
 */
export async function runAsProcess(argv: string[]): Promise<number> {
  endQuietlyOnClosedPipe();
  followNpmLauncher();
  return await main(argv);
}

/** Runs the CLI; returns the exit code (never calls process.exit, so it can be tested in-process). */
export async function main(argv: string[]): Promise<number> {
  let chosen: { name: string; args: string[]; options: Record<string, unknown>; sub?: string } | undefined;
  const program = buildProgram((name, args, options) => {
    chosen = { name, args, options };
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0
        ? EXIT.ok
        : EXIT.usage;
    }
    throw err;
  }
  if (!chosen) {
    program.outputHelp();
    return EXIT.usage;
  }
  // Command groups: the module gets the subcommand as its first argument.
  if (chosen.name === 'schedule' || chosen.name === 'recipients' || chosen.name === 'access') {
    const sub = argv[argv.indexOf(chosen.name) + 1] ?? '';
    chosen = { ...chosen, args: [sub, ...chosen.args] };
  }
  let traced: CommandTracing | undefined;
  try {
    traced = await startTracing(chosen.name);
  } catch (err) {
    return reportError(err);
  }
  try {
    return await runCommand(chosen.name, chosen.args, chosen.options, traced);
  } finally {
    await traced?.stop();
  }
}

/** The commands that may trace (docs/traces.md; their service names in cli/trace-start.ts). */
const TRACING_COMMANDS = new Set(['worker', 'serve', 'enqueue']);

/**
 * Tracing for a command that traces, when an OTLP endpoint is set: started before the command's
 * module is loaded. Its code is loaded only for those commands (the others start as fast as ever).
 */
async function startTracing(command: string): Promise<CommandTracing | undefined> {
  if (!TRACING_COMMANDS.has(command)) return undefined;
  const { startCommandTracing } = await import('./trace-start.ts');
  return await startCommandTracing(command, packageVersion());
}

/** Loads and runs a command; an `enqueue` that traces runs inside its own span. */
async function runCommand(
  name: string,
  args: string[],
  options: Record<string, unknown>,
  traced: CommandTracing | undefined,
): Promise<number> {
  const load = COMMANDS[name];
  if (!load) {
    process.stderr.write(`usdc-batch ${name}: this command is not implemented yet.\n`);
    return EXIT.usage;
  }
  const mod = await load();
  keepCompiledModules();
  try {
    const run = () => mod.run(args, options);
    return await (traced && name === 'enqueue'
      ? traced.tracing.inSpan(SPAN.enqueue, { 'usdc_batch.command': name }, run)
      : run());
  } catch (err) {
    // Ending (a signal, a closed pipe): what failed because of it is not news.
    if (isEnding()) return EXIT.ok;
    return reportError(err);
  }
}

/** After a configuration that lacks required settings: where they are described, and a quick way to a working set. */
const MISSING_CONFIG_HINT = [
  'Settings are read from the environment and from a .env file in the working directory;',
  '.env.example (in the checkout) describes each one. To try it locally, `usdc-batch sandbox --redis',
  '--write-env sandbox.env` writes a working set to source (docs/getting-started.md "First run").',
].join('\n');

/** Prints an error for people (its message may quote input: control characters are escaped). */
export function reportError(err: unknown): number {
  const print = (message: string) => process.stderr.write(`${plainText(message)}\n`);
  if (err instanceof ConfigError) {
    print(err.message);
    if (err.problems.some((p) => p.missing)) print(MISSING_CONFIG_HINT);
    return EXIT.usage;
  }
  if (err instanceof FourEyesError) {
    print(`error: ${err.shortMessage}`);
    return EXIT.notPermitted;
  }
  if (err instanceof ConflictError) {
    print(`error: ${err.shortMessage}`);
    return EXIT.conflict;
  }
  if (err instanceof ValidationError) {
    print(`error: ${err.shortMessage}`);
    return err.code.startsWith('USDC_USAGE') ? EXIT.usage : EXIT.rejected;
  }
  if (err instanceof UsdcBatchError) {
    print(`error: ${err.shortMessage}${err.details ? ` (${err.details})` : ''}`);
    return EXIT.usage;
  }
  print(`error: ${err instanceof Error ? err.message : String(err)}`);
  return EXIT.usage;
}
