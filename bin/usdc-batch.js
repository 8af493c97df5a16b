#!/usr/bin/env node
// The CLI entry: Node ≥ 22.18 (and 24 LTS) runs the erasable TypeScript sources directly, so the
// bin works right after `npm ci` with no build step. Node 22.15–22.17 need the type-stripping flag:
// the entry re-runs itself with it.
import { spawn } from 'node:child_process';
import module from 'node:module';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 15)) {
  process.stderr.write(
    `usdc-batch needs Node.js 22.15 or newer (24 LTS recommended); this is ${process.version}.\n`,
  );
  process.exit(2);
}
if (major === 22 && minor < 18 && !process.execArgv.includes('--experimental-strip-types')) {
  const child = spawn(process.execPath, ['--experimental-strip-types', ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
} else {
  // Node's on-disk compile cache (in the OS temp directory; NODE_COMPILE_CACHE names another,
  // NODE_DISABLE_COMPILE_CACHE=1 turns it off) keeps the stripped TypeScript and V8's code for each
  // source file, keyed by its content: every later start of a command skips that work (about half
  // of a worker's start-up CPU), as TypeScript's own `tsc` does.
  module.enableCompileCache?.();
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (w.name !== 'ExperimentalWarning') process.stderr.write(`${w.name}: ${w.message}\n`);
  });
  const { runAsProcess } = await import('../src/cli/main.ts');
  process.exitCode = await runAsProcess(process.argv.slice(2));
}
