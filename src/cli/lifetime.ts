import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

/*
 * How a command process ends (docs/operating.md "What the commands print"): nothing a command started — a private Redis, the
 * sandbox's chains, a temp directory with throwaway keys, an environment file — outlives it, whether
 * it ends normally, by Ctrl-C or SIGTERM, or because the reader of its output went away (`| head`);
 * a closed pipe ends it quietly (no stack trace, exit 0).
 *
 * A command that starts such things registers how to release them (`holdUntilExit`) and, while it
 * holds them, lets signals end it through the releases (`endOnSignals`). Everything else ends as
 * Node ends it. Releases run newest first, once, whichever way the end comes.
 */

/** Stops or removes one thing a command started. */
export type Release = () => Promise<void> | void;

const held = new Set<Release>();
let ending: Promise<never> | undefined;

/** Exit code of a command ended by a signal: 128 + its number. */
const SIGNAL_EXIT: Readonly<Record<'SIGINT' | 'SIGTERM', number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Registers `release` to run if the process ends before the command lets go of what it started.
 * Returns the command's own way to release it: runs it (once, also when an end is already running
 * it) and unregisters it.
 */
export function holdUntilExit(release: Release): () => Promise<void> {
  let run: Promise<void> | undefined;
  const once: Release = () => (run ??= Promise.resolve().then(release));
  held.add(once);
  return async () => {
    await once();
    held.delete(once);
  };
}

/** True once the process is ending (a signal, a closed pipe): a command's errors then are not news. */
export function isEnding(): boolean {
  return ending !== undefined;
}

/**
 * Ends the process with `code` after running every release still held (newest first; one that
 * fails does not stop the others). A second call waits for the first.
 */
export function endProcess(code: number): Promise<never> {
  ending ??= (async () => {
    for (const release of [...held].reverse()) {
      try {
        await release();
      } catch {
        // Ending anyway: the next release must still run.
      }
    }
    process.exit(code);
  })();
  return ending;
}

/**
 * While the returned function has not been called, SIGINT and SIGTERM end the process through the
 * releases (exit 130, 143), after printing `notice` on stderr; a second signal exits at once (the
 * process's 'exit' hooks still kill what they hold: see killOnExit).
 */
export function endOnSignals(notice?: string): () => void {
  const on = (signal: 'SIGINT' | 'SIGTERM') => () => {
    if (isEnding()) process.exit(SIGNAL_EXIT[signal]);
    if (notice) writeQuietly(process.stderr, `\n${notice}\n`);
    void endProcess(SIGNAL_EXIT[signal]);
  };
  const onInt = on('SIGINT');
  const onTerm = on('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
}

/** A write that cannot throw or crash: used while ending, when the reader may be gone. */
function writeQuietly(stream: NodeJS.WriteStream, text: string): void {
  if (stream.destroyed || !stream.writable) return;
  try {
    stream.write(text, () => {});
  } catch {
    // The stream is gone: nothing to tell.
  }
}

/** The errors of a stream whose reader went away (`| head` closed the pipe). */
function isClosedPipe(err: NodeJS.ErrnoException): boolean {
  return (
    err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' || err.code === 'ERR_STREAM_WRITE_AFTER_END'
  );
}

/**
 * A reader that closes stdout (or stderr) early ends the command quietly: no stack trace, exit 0,
 * after the releases. Any other error of those streams is thrown as before.
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (!isClosedPipe(err)) throw err;
      void endProcess(0);
    });
  }
}

/**
 * When the process was started by npm (`npx usdc-batch …`, an npm script), npm runs it under a
 * shell: killing npm kills that shell and leaves this process running, its parent gone. Seeing its
 * parent change, it ends as on SIGTERM (the command's own SIGTERM handling, graceful where it has
 * one). A process started otherwise is left alone: one started with `nohup` or by a supervisor may
 * outlive the shell that started it on purpose.
 */
export function followNpmLauncher(intervalMs = 1_000): void {
  if (!process.env['npm_lifecycle_event']) return;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
  }, intervalMs);
  timer.unref();
}

/**
 * Kills `child` (SIGKILL) when this process exits, however it exits short of a SIGKILL of its own:
 * the last line of defence behind a command's releases.
 */
export function killOnExit(child: {
  kill(signal: NodeJS.Signals): boolean;
  once(e: 'exit', f: () => void): unknown;
}): void {
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
}

/** Removes `dir` when this process exits, if nothing removed it before. */
export function removeOnExit(dir: string): () => void {
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', remove);
  return () => {
    process.off('exit', remove);
    remove();
  };
}

let pdeathsig: boolean | undefined;

/**
 * `command args` run so that the kernel sends it `signal` when this process dies, even by SIGKILL
 * (util-linux's `setpriv --pdeathsig`, which execs the command: same PID), where setpriv is
 * available (Linux); as it is elsewhere.
 */
export function tiedToThisProcess(
  command: string,
  args: readonly string[],
  signal: 'TERM' | 'KILL' = 'TERM',
): [string, string[]] {
  if (pdeathsig === undefined) {
    const r = spawnSync('setpriv', ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    pdeathsig = process.platform === 'linux' && !r.error && /--pdeathsig/.test(r.stdout ?? '');
  }
  return pdeathsig ? ['setpriv', ['--pdeathsig', signal, '--', command, ...args]] : [command, [...args]];
}
