import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAccessFile, readAccessFile } from '../../src/config/access-file.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { tokenDigest } from '../../src/domain/access.ts';
import { ConfigError } from '../../src/domain/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'usdc-batch-access-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const A = tokenDigest('token-of-alice-0123456789');
const B = tokenDigest('token-of-bob-0123456789');
const G = tokenDigest('token-of-grafana-0123456789');

function fileOf(text: string): string {
  const file = join(dir, `access-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

function problemsOf(env: Record<string, string>, access = true) {
  try {
    loadConfig(env, { access });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('ACCESS_FILE', () => {
  it('reads named credentials with their roles and SHA-256 digests', () => {
    const read = parseAccessFile(`credentials:
  - { name: payroll-hook, roles: [submitter], sha256: ${A} }
  - { name: grafana,      roles: [metrics],   sha256: ${G.toUpperCase()} }   # any case
  - name: ops-bob
    roles: [operator, viewer, operator]
    sha256: ${B}
`);
    expect(read).toEqual({
      credentials: [
        { name: 'payroll-hook', roles: ['submitter'], sha256: A },
        { name: 'grafana', roles: ['metrics'], sha256: G },
        { name: 'ops-bob', roles: ['operator', 'viewer'], sha256: B },
      ],
      problems: [],
    });
  });

  it('reports every problem at once, naming the entry, and then gives no credential', () => {
    const read = parseAccessFile(`credentials:
  - { name: alice, roles: [aprover], sha256: ${A} }
  - { name: alice, roles: [viewer], sha256: ${B} }
  - { name: Carol, roles: [viewer], sha256: 1234 }
  - { name: dave, roles: [], sha256: ${B}, token: hunter2 }
  - just-a-string
`);
    expect(read.credentials).toEqual([]);
    expect(read.problems).toEqual([
      'credentials[0] (alice): unknown role "aprover" (roles: metrics, viewer, submitter, operator, approver)',
      'credentials[2] (Carol): name must be 1-40 characters of a-z, 0-9, "_", "." or "-"',
      'credentials[2] (Carol): sha256 must be 64 hex digits (the SHA-256 of the token: usdc-batch access token)',
      'credentials[3] (dave): unknown key "token"',
      'credentials[3] (dave): roles must be a list of one or more of metrics, viewer, submitter, operator, approver',
      'credentials[4]: must be a mapping { name, roles, sha256 }',
    ]);
    expect(
      parseAccessFile(`credentials:
  - { name: alice, roles: [viewer], sha256: ${A} }
  - { name: alice, roles: [viewer], sha256: ${B} }
  - { name: bob, roles: [viewer], sha256: ${A} }
`).problems,
    ).toEqual([
      'credentials[1] (alice): the name is used twice',
      'credentials[2] (bob): the same sha256 as alice: two credentials may not share a token',
    ]);
  });

  it('refuses the SHA-256 of the empty string (sha256sum of an unset variable), naming the entry', () => {
    const empty = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const read = parseAccessFile(`credentials:
  - { name: alice, roles: [approver], sha256: ${A} }
  - { name: grafana, roles: [metrics, viewer], sha256: ${empty.toUpperCase()} }
`);
    expect(read.credentials).toEqual([]);
    expect(read.problems).toEqual([
      'credentials[1] (grafana): sha256 is the SHA-256 of the empty string (what sha256sum prints for an unset variable): make a token with usdc-batch access token',
    ]);
  });

  it('refuses what is not an access file: other YAML, a key given twice, aliases, a FIFO-like path', () => {
    expect(parseAccessFile('- a\n- b\n').problems).toEqual(['must be a mapping with a `credentials:` list']);
    expect(parseAccessFile(`credentials: []\nextra: 1\n`).problems).toEqual([
      'unknown key "extra" (only credentials)',
    ]);
    expect(
      parseAccessFile(`credentials:\n  - { name: a, name: b, roles: [viewer], sha256: ${A} }\n`).problems[0],
    ).toMatch(/^not valid YAML at line 2/);
    expect(
      parseAccessFile(`x: &r { name: a, roles: [viewer], sha256: ${A} }\ncredentials: [*r]\n`).problems,
    ).toEqual(['must not use YAML aliases (*name)']);
    expect(readAccessFile(dir).problems).toEqual([`${dir} is a directory, not a regular file`]);
    expect(readAccessFile(join(dir, 'none.yaml')).problems).toEqual([
      `${join(dir, 'none.yaml')} cannot be read (ENOENT)`,
    ]);
  });

  it('is read by serve and named in its configuration problems; the three tokens must then be unset', () => {
    const good = fileOf(`credentials:\n  - { name: alice, roles: [approver], sha256: ${A} }\n`);
    expect(loadConfig({ ACCESS_FILE: good }, { access: true }).credentials).toEqual([
      { name: 'alice', roles: ['approver'], sha256: A },
    ]);
    // A process that does not serve does not read it (nor need it to exist).
    expect(loadConfig({ ACCESS_FILE: join(dir, 'elsewhere.yaml') }).credentials).toEqual([]);
    expect(
      problemsOf(
        { ACCESS_FILE: good, HOOK_TOKEN: 'hook-token-0123456789', METRICS_TOKEN: 'metrics-0123456789abc' },
        false,
      ),
    ).toEqual([
      {
        variable: 'HOOK_TOKEN, METRICS_TOKEN',
        message: expect.stringContaining('must be unset when ACCESS_FILE is set'),
      },
    ]);
    const bad = fileOf(
      `credentials:\n  - { name: alice, roles: [root], sha256: ${A} }\n  - { name: bob, roles: [viewer], sha256: abc }\n`,
    );
    expect(problemsOf({ ACCESS_FILE: bad })).toEqual([
      {
        variable: 'ACCESS_FILE',
        message: expect.stringMatching(/^credentials\[0\] \(alice\): unknown role "root"/),
      },
      {
        variable: 'ACCESS_FILE',
        message: expect.stringMatching(/^credentials\[1\] \(bob\): sha256 must be/),
      },
    ]);
  });

  it('must name an approver when the address book is a control (hold, reject, NEW_RECIPIENT_MAX_USDC)', () => {
    const noApprover = fileOf(`credentials:\n  - { name: hook, roles: [submitter, viewer], sha256: ${A} }\n`);
    for (const env of [{ NEW_RECIPIENT_POLICY: 'hold' }, { NEW_RECIPIENT_MAX_USDC: '500' }]) {
      expect(problemsOf({ ACCESS_FILE: noApprover, ...env })).toEqual([
        {
          variable: 'ACCESS_FILE',
          message: expect.stringContaining('has no credential with role approver, required with'),
        },
      ]);
    }
    const withApprover = fileOf(
      `credentials:\n  - { name: hook, roles: [submitter], sha256: ${A} }\n  - { name: alice, roles: [approver], sha256: ${B} }\n`,
    );
    expect(
      loadConfig({ ACCESS_FILE: withApprover, NEW_RECIPIENT_POLICY: 'reject' }, { access: true }).credentials,
    ).toHaveLength(2);
  });
});
