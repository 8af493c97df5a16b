import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The guide (README.md and docs/*.md) as a newcomer meets it: every `usdc-batch` command a page
 * shows exists, with every option it shows (the real CLI's --help says so), and every relative link
 * and anchor leads somewhere. The Node versions the pages state are the ones the code checks.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'bin/usdc-batch.js');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** README.md and every page of docs/, as paths from the repository's root. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** A page's fenced code blocks (with their info string) and its text outside them. */
function splitPage(text: string): { blocks: { info: string; body: string }[]; prose: string } {
  const blocks: { info: string; body: string }[] = [];
  const prose = text.replace(/^( *)```([^\n]*)\n([\s\S]*?)^\1```[ \t]*$/gm, (_all, _indent, info, body) => {
    blocks.push({ info: String(info).trim(), body: String(body) });
    return '';
  });
  return { blocks, prose };
}

/** The inline code spans of some Markdown prose. */
const codeSpans = (prose: string): string[] => [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string);

// --- commands --------------------------------------------------------------------------------------

/** Commands that take a subcommand: `schedule add`, `recipients import`, `access token`. */
const GROUPS = ['schedule', 'recipients', 'access'];

type Shown = {
  readonly page: string;
  readonly text: string;
  readonly command: string[];
  readonly options: string[];
};

/**
 * The `usdc-batch` invocations in a shell line (`npx usdc-batch …`, `node /app/bin/usdc-batch.js …`):
 * the command path (`['schedule', 'add']`) and the options written after it.
 */
function invocations(line: string): { command: string[]; options: string[] }[] {
  const found: { command: string[]; options: string[] }[] = [];
  const code = line.replace(/\\\|/g, '|').replace(/(^|\s)#.*$/, '');
  for (const segment of code.split(/&&|\|\||[;|]/)) {
    const tokens = segment.trim().split(/\s+/);
    const at = tokens.findIndex((t) => /(^|\/)usdc-batch(\.js)?$/.test(t));
    if (at < 0) continue;
    const rest = tokens.slice(at + 1).map((t) => t.replace(/^[[(]+|[\])…,]+$/g, ''));
    const command: string[] = [];
    const first = rest[0] ?? '';
    if (/^[a-z][a-z-]*$/.test(first)) {
      command.push(first);
      const sub = rest[1] ?? '';
      if (GROUPS.includes(first) && /^[a-z][a-z-]*$/.test(sub)) command.push(sub);
    } else if (first !== '' && !first.startsWith('-')) {
      continue; // `usdc-batch <command> --help`, `usdc-batch (the CLI)`: a placeholder, not a command
    }
    const options = rest
      .filter((t) => /^--?[a-zA-Z][a-zA-Z-]*(=.*)?$/.test(t))
      .map((t) => t.replace(/=.*$/, ''));
    found.push({ command, options });
  }
  return found;
}

/**
 * Every command a page shows: in its shell code blocks, in its inline code, and in a table whose
 * first column is `command` (operating.md's list, whose cells name commands without `usdc-batch`).
 */
function shownCommands(): Shown[] {
  const shown: Shown[] = [];
  for (const page of PAGES) {
    const { blocks, prose } = splitPage(read(page));
    const lines = [
      ...blocks.filter((b) => /^(sh|bash|shell|console)$/.test(b.info)).flatMap((b) => b.body.split('\n')),
      ...codeSpans(prose),
    ];
    let commandTable = false;
    for (const row of prose.split('\n')) {
      if (!row.startsWith('|')) {
        commandTable = false;
        continue;
      }
      if (/^\| *command *\|/.test(row)) commandTable = true;
      else if (commandTable && !row.startsWith('|---')) {
        const first = row.split(/(?<!\\)\|/)[1] ?? '';
        lines.push(...codeSpans(first).map((span) => `usdc-batch ${span}`));
      }
    }
    for (const text of lines) {
      for (const { command, options } of invocations(text)) shown.push({ page, text, command, options });
    }
  }
  return shown;
}

/** `usdc-batch <command…> --help` of the real CLI, once per command. */
const helps = new Map<string, { code: number | null; text: string }>();
function help(command: string[]): { code: number | null; text: string } {
  const key = command.join(' ');
  let h = helps.get(key);
  if (!h) {
    const r = spawnSync(process.execPath, [BIN, ...command, '--help'], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    h = { code: r.status, text: `${r.stdout}${r.stderr}` };
    helps.set(key, h);
  }
  return h;
}

describe('the guide shows only commands and options that exist', () => {
  const shown = shownCommands();

  it('finds the commands the pages show (the quick start, the walkthroughs, the command table)', () => {
    const names = new Set(shown.map((s) => s.command.join(' ')));
    for (const name of [
      'demo',
      'sandbox',
      'worker',
      'enqueue',
      'serve',
      'rebalance',
      'schedule add',
      'recipients import',
      'access token',
      'audit',
      'wallets',
      'approve',
    ]) {
      expect([...names], name).toContain(name);
    }
  });

  // One real CLI process per command shown (~40): bounded, not timed.
  it(
    'every command a page shows answers --help with exit 0, and lists every option shown with it',
    { timeout: 180_000 },
    () => {
      const problems: string[] = [];
      for (const s of shown) {
        const h = help(s.command);
        const where = `${s.page}: \`${s.text.trim()}\``;
        // An unknown command's --help prints the parent's help (exit 0): its Usage line tells.
        const usage = new RegExp(`^Usage: usdc-batch${s.command.map((c) => ` ${c}`).join('')}( |$)`, 'm');
        if (h.code !== 0 || !usage.test(h.text)) {
          problems.push(
            `${where}: usdc-batch ${s.command.join(' ')} is not a command (--help: exit ${h.code})`,
          );
          continue;
        }
        for (const option of s.options) {
          if (option === '--help' || option === '-h') continue;
          const listed = new RegExp(`(^|[\\s,])${option}(?![\\w-])`, 'm').test(h.text);
          if (!listed) problems.push(`${where}: usdc-batch ${s.command.join(' ')} has no option ${option}`);
        }
      }
      expect(problems).toEqual([]);
    },
  );
});

// --- links -----------------------------------------------------------------------------------------

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a Markdown file offers: its headings' (repeats get -1, -2 …) and explicit ids. */
function anchors(file: string): Set<string> {
  const { prose } = splitPage(readFileSync(file, 'utf8'));
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of prose.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of prose.matchAll(/<a (?:id|name)="([^"]+)"/g)) found.add(m[1] as string);
  return found;
}

describe('every relative link of the guide resolves', () => {
  it('to a file or folder of the repository, and to a heading of it when it names an anchor', () => {
    const problems: string[] = [];
    let count = 0;
    for (const page of PAGES) {
      const { prose } = splitPage(read(page));
      const text = prose.replace(/`[^`\n]+`/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/i.test(target)) continue;
        count++;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(path));
        if (!existsSync(file)) {
          problems.push(`${page}: (${target}) — no ${relative(ROOT, file)}`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(file).isDirectory() || !file.endsWith('.md')) {
          problems.push(`${page}: (${target}) — an anchor into a file that is not Markdown`);
        } else if (!anchors(file).has(anchor)) {
          problems.push(`${page}: (${target}) — ${relative(ROOT, file)} has no heading #${anchor}`);
        }
      }
    }
    expect(count, 'links checked').toBeGreaterThan(100);
    expect(problems).toEqual([]);
  });

  it('computes GitHub’s anchors (punctuation dropped, code and apostrophes too)', () => {
    expect(slug('HTTP API (`usdc-batch serve`)')).toBe('http-api-usdc-batch-serve');
    expect(slug('Replicated Redis: Sentinel, managed services')).toBe(
      'replicated-redis-sentinel-managed-services',
    );
    expect(slug("`npm ci` and npm 11's install-script warning")).toBe(
      'npm-ci-and-npm-11s-install-script-warning',
    );
    expect(slug('docker-compose.yml’s own variables')).toBe('docker-composeymls-own-variables');
  });
});

// --- what the pages state of the code --------------------------------------------------------------

/** The smallest Node 22 minor a semver range of `engines.node` allows (22.0 for `>=22`, none for `>=24`). */
function node22Minimum(range: string): number | undefined {
  const minima = range.split('||').flatMap((part) => {
    const m = /(?:>=|\^|~)?\s*(\d+)(?:\.(\d+))?/.exec(part.trim());
    if (!m) return [];
    const major = Number(m[1]);
    if (major === 22) return [Number(m[2] ?? 0)];
    return major < 22 && part.includes('>=') ? [0] : [];
  });
  return minima.length > 0 ? Math.min(...minima) : undefined;
}

describe('the Node versions the guide states are the code’s', () => {
  const lock = JSON.parse(read('package-lock.json')) as {
    packages: Record<string, { dev?: boolean; engines?: { node?: string } | string[] }>;
  };
  const needs = (dev: boolean) =>
    Math.max(
      ...Object.entries(lock.packages)
        .filter(([name, p]) => name !== '' && (dev || !p.dev) && !Array.isArray(p.engines))
        .map(([, p]) => node22Minimum((p.engines as { node?: string } | undefined)?.node ?? '') ?? 0),
    );

  it('runs on the Node 22 its dependencies and its own entry accept; tests on what the dev tools need', () => {
    const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
    const run = node22Minimum(pkg.engines.node);
    expect(run, 'package.json engines').toBe(needs(false));
    const bin = /major === 22 && minor < (\d+)\)\)/.exec(read('bin/usdc-batch.js'));
    expect(Number(bin?.[1]), 'bin/usdc-batch.js refuses older').toBe(run);
    const ci = /a === 22 && b >= (\d+)/.exec(read('.ci/run'));
    const test = needs(true);
    expect(Number(ci?.[1]), '.ci/run checks what the dev tools need').toBe(test);
    expect(
      test,
      'the tests run .ts helpers with plain node: type stripping from 22.18',
    ).toBeGreaterThanOrEqual(18);
    for (const page of ['README.md', 'docs/getting-started.md']) {
      expect(read(page), page).toContain(`Node.js 22.${run} or newer`);
      expect(read(page), page).toContain(`22.${test} or newer`);
    }
    expect(read('docs/getting-started.md')).toContain(`Node.js 22.${test} or newer to run the tests`);
  });
});

describe('the guide names every metric the code exports', () => {
  it('lists each usdc_batch_* series in docs/http-api.md', () => {
    const names = new Set<string>();
    const walk = (dir: string) => {
      for (const f of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        if (f.isDirectory()) walk(join(dir, f.name));
        else if (f.name.endsWith('.ts'))
          for (const m of read(join(dir, f.name)).matchAll(/['`](usdc_batch_[a-z_]+)['`]/g))
            names.add(m[1] as string);
      }
    };
    walk('src');
    expect(names.size).toBeGreaterThan(15);
    const page = read('docs/http-api.md');
    expect([...names].filter((n) => !page.includes(`\`${n}`)).sort()).toEqual([]);
  });
});

describe('code cites the guide by page and section, and every citation is there', () => {
  it('names pages of docs/ that exist, and headings those pages have', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        if (f.isDirectory()) walk(join(dir, f.name));
        else if (/\.(ts|js|ya?ml|md|lua)$/.test(f.name)) files.push(join(dir, f.name));
      }
    };
    for (const dir of ['src', 'test', 'bench', 'support', 'deploy', 'docs', 'scripts', 'bin']) walk(dir);
    files.push(
      'docker-compose.yml',
      'Dockerfile',
      'eslint.config.js',
      '.env.example',
      'secrets/README.md',
      '.ci/run',
    );
    const headings = (page: string) =>
      [...splitPage(read(page)).prose.matchAll(/^#{1,6} +(.+?) *$/gm)].map((m) =>
        (m[1] as string).replace(/`/g, ''),
      );
    const problems: string[] = [];
    let count = 0;
    for (const file of files) {
      // A citation may run over a comment's line break (` * `, `# `, `// `).
      const text = read(file).replace(/\n[ \t]*(?:\*|#|\/\/)?[ \t]*/g, ' ');
      for (const m of text.matchAll(/docs\/([a-z][a-z-]*\.md)(?: "([^"]+)")?/g)) {
        count++;
        const page = `docs/${m[1]}`;
        if (!existsSync(join(ROOT, page))) {
          problems.push(`${file}: ${m[0]} — no ${page}`);
          continue;
        }
        const section = m[2];
        if (section !== undefined && /^[A-Z]/.test(section)) {
          // A heading, a bold run-in paragraph (`**Memory.**`) or a row of a table (`| \`NAME\``).
          const prose = splitPage(read(page)).prose;
          const found =
            headings(page).some((h) => h.startsWith(section)) ||
            prose.includes(`**${section}`) ||
            prose.includes(`| \`${section}\``);
          if (!found) problems.push(`${file}: ${m[0]} — ${page} has no heading "${section}"`);
        }
      }
    }
    expect(count, 'citations checked').toBeGreaterThan(100);
    expect(problems).toEqual([]);
  });

  it('cites the README only by the sections the front page has (the rest moved to docs/)', () => {
    const front = splitPage(read('README.md'))
      .prose.split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => l.replace(/^#+ +/, '').replace(/`/g, ''));
    const problems: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = join(dir, f.name);
        if (f.isDirectory()) walk(path);
        else if (/\.(ts|js|ya?ml|md|lua)$/.test(f.name)) {
          const text = read(path).replace(/\n[ \t]*(?:\*|#|\/\/)?[ \t]*/g, ' ');
          for (const m of text.matchAll(/README,? "([^"]+)"/g)) {
            if (!front.some((h) => h.startsWith(m[1] as string)))
              problems.push(
                `${path}: README ${JSON.stringify(m[1])}: no such section there; cite the docs/ page that holds it`,
              );
          }
        }
      }
    };
    for (const dir of ['src', 'test', 'bench', 'support', 'deploy', 'docs', 'scripts']) walk(dir);
    expect(problems).toEqual([]);
  });
});
