import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseDotenv } from 'dotenv';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

type Service = {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  env_file?: string | (string | { path: string })[];
  environment?: Record<string, string> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[] };
  volumes?: string[];
  ports?: string[];
};

const compose = parseYaml(read('docker-compose.yml')) as { services: Record<string, Service> };
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const words = (command: string | string[] | undefined): string[] =>
  Array.isArray(command) ? command.map(String) : (command ?? '').split(/\s+/).filter(Boolean);
const flag = (command: string[], name: string) => command[command.indexOf(name) + 1];
const envFiles = (s: Service): string[] =>
  (Array.isArray(s.env_file) ? s.env_file : [s.env_file ?? '']).map((f) =>
    typeof f === 'string' ? f : f.path,
  );
const environment = (s: Service): Record<string, string> =>
  Array.isArray(s.environment)
    ? Object.fromEntries(
        s.environment.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      )
    : (s.environment ?? {});

// `docker compose` validates the file where the plugin answers; here the client exists but the
// plugin does not, so the checks below, on the parsed YAML, are what guards the settings.
const composePlugin =
  spawnSync('docker', ['compose', 'version'], { timeout: 10_000, stdio: 'ignore' }).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'usdc-batch-compose-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('docker-compose.yml', () => {
  it.runIf(composePlugin)('is accepted by docker compose config', () => {
    copyFileSync(join(ROOT, 'docker-compose.yml'), join(scratch, 'docker-compose.yml'));
    copyFileSync(join(ROOT, '.env.example'), join(scratch, '.env'));
    const r = spawnSync(
      'docker',
      ['compose', '-f', join(scratch, 'docker-compose.yml'), 'config', '--quiet'],
      {
        cwd: scratch,
        timeout: 30_000,
        encoding: 'utf8',
      },
    );
    expect(r.status, r.stderr).toBe(0);
  });

  it('runs redis with AOF fsynced on every write, no eviction, and a ping healthcheck', () => {
    const redis = service('redis');
    expect(redis.image).toMatch(/^redis:\d/);
    const command = words(redis.command);
    expect(command[0]).toBe('redis-server');
    expect(flag(command, '--appendonly')).toBe('yes');
    expect(flag(command, '--appendfsync')).toBe('always');
    expect(flag(command, '--maxmemory-policy')).toBe('noeviction');
    expect(words(redis.healthcheck?.test).join(' ')).toMatch(/redis-cli ping$/);
    expect(redis.volumes?.some((v) => v.endsWith(':/data'))).toBe(true);
  });

  it('runs the worker and the api from one image, configured from .env, on the compose redis', () => {
    const worker = service('worker');
    const api = service('api');
    expect(worker.image).toBeDefined();
    expect(api.image).toBe(worker.image);
    expect(api.build).toEqual(worker.build);
    expect(words(worker.command)).toEqual(['worker']);
    expect(words(api.command)).toEqual(['serve']);
    for (const s of [worker, api]) {
      expect(envFiles(s)).toContain('.env');
      expect(environment(s)['REDIS_URL']).toBe('redis://redis:6379');
      const dependsOn = s.depends_on as Record<string, { condition?: string }>;
      expect(dependsOn['redis']?.condition).toBe('service_healthy');
    }
    expect(api.ports?.some((p) => String(p).endsWith(':8080'))).toBe(true);
    // serve listens on loopback by default: in the container it must listen on every interface,
    // on the port that is published.
    expect(environment(api)).toMatchObject({ HTTP_HOST: '0.0.0.0', HTTP_PORT: '8080' });
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('builds on node:24-slim with production dependencies only', () => {
    expect(dockerfile).toMatch(/^FROM node:24-slim$/m);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(dockerfile).toMatch(/^USER node$/m);
  });

  it('starts the CLI entry that exists in the repository, the worker by default', () => {
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "bin\/usdc-batch\.js"\]$/m);
    expect(dockerfile).toMatch(/^CMD \["worker"\]$/m);
    expect(existsSync(join(ROOT, 'bin/usdc-batch.js'))).toBe(true);
    for (const [, source] of dockerfile.matchAll(/^COPY (\S+) /gm)) {
      for (const path of (source ?? '').split(' ')) expect(existsSync(join(ROOT, path)), path).toBe(true);
    }
  });

  it('keeps .env, node_modules and git history out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['.env', 'node_modules', '.git']) expect(ignored).toContain(entry);
  });
});

describe('.env.example', () => {
  // Every variable of PRODUCT.md §3.
  const PRODUCT_VARIABLES = [
    'REDIS_URL',
    'ALLOW_VOLATILE_REDIS',
    'QUEUE_PREFIX',
    'TRANSFER_API_URL',
    'TRANSFER_API_KEY',
    'NETWORK',
    'EVM_PRIVATE_KEY',
    'EVM_PRIVATE_KEY_FILE',
    'SOLANA_KEYPAIR_FILE',
    'SOLANA_PRIVATE_KEY',
    'PERMIT_SPENDER',
    'PERMIT_SPENDER_ETH',
    'PERMIT_SPENDER_BASE',
    'PERMIT_SPENDER_ARB',
    'PERMIT_SPENDER_POLYGON',
    'EVM_RPC_URL_ETH',
    'EVM_RPC_URL_BASE',
    'EVM_RPC_URL_ARB',
    'EVM_RPC_URL_POLYGON',
    'MAX_FEE_BPS',
    'MAX_FEE_USDC',
    'MAX_TRANSFER_USDC',
    'MAX_BATCH_USDC',
    'MAX_DAILY_USDC',
    'APPROVAL_THRESHOLD_USDC',
    'APPROVER_TOKEN',
    'NEW_RECIPIENT_POLICY',
    'NEW_RECIPIENT_MAX_USDC',
    'CALLBACK_ALLOWED_HOSTS',
    'SOLANA_ALLOWED_DESTINATIONS',
    'SOLANA_RPC_URL',
    'WORKER_CONCURRENCY',
    'API_RATE_LIMIT',
    'HTTP_HOST',
    'HTTP_PORT',
    'HOOK_TOKEN',
    'HOOK_HMAC_SECRET',
    'LOG_LEVEL',
  ];
  const example = parseDotenv(read('.env.example'));

  it('documents every variable of the product contract', () => {
    for (const name of PRODUCT_VARIABLES) expect(Object.keys(example), name).toContain(name);
  });

  it('holds no secret: every key and token is left empty', () => {
    for (const name of [
      'TRANSFER_API_KEY',
      'EVM_PRIVATE_KEY',
      'SOLANA_PRIVATE_KEY',
      'APPROVER_TOKEN',
      'HOOK_TOKEN',
      'HOOK_HMAC_SECRET',
    ]) {
      expect(example[name], name).toBe('');
    }
  });

  it('is a valid configuration as it stands, so copying it never starts with errors', () => {
    expect(() => loadConfig(example)).not.toThrow();
  });
});
