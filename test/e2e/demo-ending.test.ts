import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BIN, REPO_ROOT, waitFor } from '../helpers/cli.ts';
import { redisForSuite } from '../helpers/redis.ts';
import { processAlive } from '../helpers/sandbox.ts';

/*
 * Issue 35, finding 4: `npx usdc-batch demo | head -3` crashed with an EPIPE stack trace and left
 * its private redis-server running and its temp directory with `throwaway-evm.key` behind; killing
 * the npx process left the demo (and its worker) running. Nothing the demo starts may outlive it,
 * whether it ends normally, by Ctrl-C or SIGTERM, by a closed pipe, or because npm was killed.
 */

/** What the demo printed that names what it started: its Redis port, temp dir and anvils. */
type Started = { port: number; dir: string; anvils: number[] };

function startedIn(stdout: string): Started | undefined {
  const redis = /private, durable Redis at redis:\/\/127\.0\.0\.1:([0-9]+) \(data in (\S+)\)/.exec(stdout);
  const anvils = [...stdout.matchAll(/anvil pid ([0-9]+)/g)].map((m) => Number(m[1]));
  if (!redis || anvils.length < 4) return undefined;
  return { port: Number(redis[1]), dir: redis[2] as string, anvils };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Nothing it started is left: the Redis port closed, the temp dir (throwaway keys) gone, no anvil. */
async function expectNothingLeft(s: Started): Promise<void> {
  await expect(canConnect(s.port)).resolves.toBe(false);
  expect(existsSync(s.dir), s.dir).toBe(false);
  expect(s.anvils.filter(processAlive)).toEqual([]);
}

/** The demo as its own process, its output collected; `command` wraps it (a shell, as npm runs it). */
function spawnDemo(options: { shell?: boolean; redisUrl?: string } = {}) {
  const env = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    LOG_LEVEL: 'warn',
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
  };
  const child: ChildProcess = options.shell
    ? // npm runs a bin as `sh -c '<bin> <args>'` with npm_lifecycle_event set; `; exit` keeps the
      // shell from exec'ing node, so node is the shell's child, as under npm.
      spawn('sh', ['-c', `"${process.execPath}" "${BIN}" demo; exit $?`], {
        cwd: REPO_ROOT,
        env: { ...env, npm_lifecycle_event: 'npx', npm_command: 'exec' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn(process.execPath, [BIN, 'demo'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const closed = {
    stdout: new Promise((resolve) => child.stdout?.once('close', resolve)),
    stderr: new Promise((resolve) => child.stderr?.once('close', resolve)),
  };
  return { child, exit, closed, stdout: () => stdout, stderr: () => stderr };
}

/** No stack trace or raw error on stderr. */
function expectQuiet(stderr: string): void {
  expect(stderr).not.toMatch(/EPIPE|Error:|^\s+at /m);
}

describe('usdc-batch demo ends cleanly, however it ends', () => {
  it('a reader that closes the pipe early (| head -3): exit 0, no stack trace, nothing left', async () => {
    const demo = spawnDemo();
    // As `head -3`: read three lines, then close the pipe.
    const started = await waitFor(
      'three lines',
      async () => (demo.stdout().split('\n').length > 3 ? startedIn(demo.stdout()) : undefined),
      {
        timeoutMs: 120_000,
        intervalMs: 50,
      },
    );
    demo.child.stdout?.destroy();
    const { code } = await demo.exit;
    expect(code, demo.stderr()).toBe(0);
    expectQuiet(demo.stderr());
    await expectNothingLeft(started);
  }, 180_000);

  it('SIGTERM: exit 143 after stopping everything it started', async () => {
    const demo = spawnDemo();
    const started = await waitFor('the demo to start its chains', async () => startedIn(demo.stdout()), {
      timeoutMs: 120_000,
      intervalMs: 50,
    });
    demo.child.kill('SIGTERM');
    const { code } = await demo.exit;
    expect(code, demo.stderr()).toBe(143);
    expect(demo.stderr()).toMatch(/interrupted: stopping everything the demo started/);
    await expectNothingLeft(started);
  }, 180_000);

  it('Ctrl-C (SIGINT) while it is still starting: exit 130, its Redis and temp dir gone', async () => {
    const demo = spawnDemo();
    const line = await waitFor(
      'the private Redis',
      async () =>
        /private, durable Redis at redis:\/\/127\.0\.0\.1:([0-9]+) \(data in (\S+)\)/.exec(demo.stdout()) ??
        undefined,
      { timeoutMs: 120_000, intervalMs: 20 },
    );
    demo.child.kill('SIGINT');
    const { code } = await demo.exit;
    expect(code, demo.stderr()).toBe(130);
    await expect(canConnect(Number(line[1]))).resolves.toBe(false);
    expect(existsSync(line[2] as string)).toBe(false);
    // The anvils it may have started by then are named in its output, if it got that far. Still
    // starting, it has no sandbox to stop and wait for: its exit kills them (SIGKILL, and the kernel's
    // parent-death signal), and they are gone a moment after it — waited for, not assumed at once.
    const anvils = [...demo.stdout().matchAll(/anvil pid ([0-9]+)/g)].map((m) => Number(m[1]));
    await waitFor('its anvils gone', async () => anvils.every((pid) => !processAlive(pid)), {
      timeoutMs: 10_000,
      intervalMs: 50,
    }).catch(() => {});
    expect(anvils.filter(processAlive)).toEqual([]);
  }, 180_000);

  it.skipIf(process.platform !== 'linux')(
    'killing npm (npx) that started it: the demo sees its parent gone and stops everything',
    async () => {
      const demo = spawnDemo({ shell: true });
      const started = await waitFor('the demo to start its chains', async () => startedIn(demo.stdout()), {
        timeoutMs: 120_000,
        intervalMs: 50,
      });
      const nodePid = await waitFor('the demo process under the shell', async () =>
        childOf(demo.child.pid as number),
      );
      // npm forwards the kill to its shell, which dies without passing it on.
      demo.child.kill('SIGKILL');
      await demo.exit;
      await waitFor('the orphaned demo to stop', async () => !processAlive(nodePid), {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      // Its output pipes (inherited from the shell) close when it has gone.
      await Promise.all([demo.closed.stdout, demo.closed.stderr]);
      // Stopped as on SIGTERM — or, on a machine slow enough that its few seconds of batch ended
      // before it looked for its parent (once a second), ended as usual: either way it said so.
      const ended = /^submitted \d+, failed/m.test(demo.stdout());
      if (!ended) expect(demo.stderr()).toMatch(/interrupted: stopping everything the demo started/);
      await expectNothingLeft(started);
    },
    180_000,
  );
});

describe('usdc-batch demo on a REDIS_URL', () => {
  it('says which Redis it uses by scheme, host and port only (never its password)', async () => {
    const password = 'demo-pw-never-shown';
    // An ACL user with a password (the default user stays open for the helper's own checks).
    const suite = await redisForSuite({
      extraArgs: ['--user', 'demo', 'on', `>${password}`, '~*', '&*', '+@all'],
    });
    try {
      const port = new URL(suite.url).port;
      const demo = spawnDemo({ redisUrl: `redis://demo:${password}@127.0.0.1:${port}/0` });
      const first = await waitFor('its first line', async () => /^.*\n/.exec(demo.stdout())?.[0], {
        timeoutMs: 60_000,
        intervalMs: 20,
      });
      expect(first).toBe(`using REDIS_URL redis://127.0.0.1:${port}\n`);
      demo.child.stdout?.destroy();
      const { code } = await demo.exit;
      expect(code, demo.stderr()).toBe(0);
      expect(demo.stdout() + demo.stderr()).not.toContain(password);
      expectQuiet(demo.stderr());
    } finally {
      await suite.close();
    }
  }, 120_000);
});

/** The PID of `parent`'s child, read from /proc. */
async function childOf(parent: number): Promise<number | undefined> {
  const { readFileSync, readdirSync } = await import('node:fs');
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return undefined;
}
