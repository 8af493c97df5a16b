import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** One anvil node the sandbox started: its JSON-RPC URL and the PID to stop. */
export type AnvilProcess = {
  readonly url: string;
  readonly pid: number;
  readonly chainId: number;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
};

const PLATFORM_PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

/**
 * The anvil binary from the platform package `@foundry-rs/anvil` brings as an optional dependency
 * (no install script, no download): spawning it directly makes the PID we stop anvil's own, where
 * the package's `bin.mjs` would put a node wrapper in between.
 */
function anvilBinary(): string {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) throw new Error(`anvil is not packaged for ${process.platform}-${process.arch}`);
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(`${pkg} is not installed: run npm ci (it comes with @foundry-rs/anvil)`);
  }
  return join(dirname(manifest), 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}

let pdeathsig: boolean | undefined;
/**
 * Whether util-linux's `setpriv --pdeathsig` is here: it sets "kill me when my parent dies" and
 * then execs anvil (same PID), so even a SIGKILLed sandbox leaves no anvil behind.
 */
function canTieToParent(): boolean {
  if (pdeathsig === undefined) {
    const r = spawnSync('setpriv', ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    pdeathsig = process.platform === 'linux' && !r.error && /--pdeathsig/.test(r.stdout ?? '');
  }
  return pdeathsig;
}

/** Every anvil this process started and has not stopped: killed on exit, whatever the exit. */
const running = new Set<ChildProcess>();
let exitHook = false;
function killOnExit(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHook) return;
  exitHook = true;
  // 'exit' runs for a normal end, process.exit() and an uncaught exception: no anvil outlives us
  // there. (A SIGKILL of this process cannot be caught: setpriv's parent-death signal covers it.)
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

/**
 * Starts anvil on a free loopback port (anvil binds port 0 and prints the one it got, so no port
 * is raced for) with `chainId`, no dev accounts (no key anvil would sign for) and no base fee.
 * Resolves once it listens (~0.1 s).
 */
export async function startAnvil(options: { chainId: number; timeoutMs?: number }): Promise<AnvilProcess> {
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--chain-id',
    String(options.chainId),
    '--accounts',
    '0',
    '--base-fee',
    '0',
    '--gas-price',
    '0',
    '--no-console-log',
  ];
  const child = canTieToParent()
    ? spawn('setpriv', ['--pdeathsig', 'KILL', '--', anvilBinary(), ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  let output = '';
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /Listening on ([0-9.]+:[0-9]+)/.exec(output);
      if (m) {
        child.stdout?.off('data', onData);
        // Keep draining anvil's output so a full pipe never blocks it.
        child.stdout?.resume();
        resolve(`http://${m[1]}`);
      } else if (output.length > 64_000) output = output.slice(-8_000);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`anvil exited (${code ?? signal}) before listening: ${output.slice(-500)}`)),
    );
  });
  const stop = async (graceMs = 3_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const url = await Promise.race([
      listening,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`anvil did not listen within ${options.timeoutMs ?? 10_000} ms`)),
          options.timeoutMs ?? 10_000,
        );
      }),
    ]);
    child.stdout?.on('data', () => {});
    child.stderr?.on('data', () => {});
    return { url, pid: child.pid ?? -1, chainId: options.chainId, stop };
  } catch (err) {
    await stop(500);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
