import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseDotenv } from 'dotenv';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/load-config.ts';
import { traceSettings } from '../../src/trace/trace-settings.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** The README and every page of the guide in docs/, as one text. */
const guide = () =>
  [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ]
    .map(read)
    .join('\n');

type Service = {
  image?: string;
  build?: string | { context?: string; dockerfile?: string; target?: string };
  command?: string | string[];
  env_file?: string | (string | { path: string; required?: boolean })[];
  environment?: Record<string, string> | string[];
  depends_on?: string[] | Record<string, { condition?: string; restart?: boolean }>;
  healthcheck?: { test?: string | string[] };
  volumes?: string[];
  ports?: string[];
  profiles?: string[];
  network_mode?: string;
  working_dir?: string;
  secrets?: (string | { source: string; target?: string })[];
  entrypoint?: string[];
};
/** How every service reaches the compose Redis: with REDIS_PASSWORD when one is set. */
const COMPOSE_REDIS_URL = 'redis://:${REDIS_PASSWORD:-}@redis:6379';

const composeText = read('docker-compose.yml');
const compose = parseYaml(composeText) as {
  services: Record<string, Service>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
};
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const words = (command: string | string[] | undefined): string[] =>
  Array.isArray(command) ? command.map(String) : (command ?? '').split(/\s+/).filter(Boolean);
const flag = (command: string[], name: string) => command[command.indexOf(name) + 1];
const envFiles = (s: Service) =>
  (Array.isArray(s.env_file) ? s.env_file : s.env_file ? [s.env_file] : []).map((f) =>
    typeof f === 'string' ? { path: f, required: true } : { path: f.path, required: f.required ?? true },
  );
const environment = (s: Service): Record<string, string> =>
  Array.isArray(s.environment)
    ? Object.fromEntries(
        s.environment.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      )
    : (s.environment ?? {});
/** `source:target[:mode]` of a short-syntax volume. */
const mounts = (s: Service) =>
  (s.volumes ?? []).map((v) => {
    const [source = '', target = '', mode = 'rw'] = v.split(':');
    return { source, target, mode };
  });
const profiled = (profile: string) =>
  Object.entries(compose.services)
    .filter(([, s]) => s.profiles?.includes(profile))
    .map(([name]) => name)
    .sort();
const ourImage = (s: Service) => s.image?.startsWith('usdc-batch:') ?? false;
/** The host address a published port binds (`ip:host:container`), '' for every interface. */
const hostIp = (port: string) => {
  const parts = String(port)
    .replace(/\$\{[^}]+\}/g, 'VAR')
    .split(':');
  return parts.length === 3 ? parts[0] : '';
};

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

  it('runs redis with AOF fsynced on every write, no eviction, a ping healthcheck, published on loopback only', () => {
    const redis = service('redis');
    expect(redis.image).toMatch(/^redis:\d/);
    // A shell script (its password goes in on stdin, test/integration/compose-redis-password.test.ts
    // runs it) that ends in the image's entrypoint with these flags.
    expect(redis.entrypoint).toEqual(['/bin/sh', '-c']);
    const script = words(redis.command).join(' ').replace(/\\\s+/g, ' ');
    const start = words(script.slice(script.indexOf('exec docker-entrypoint.sh redis-server -')));
    expect(flag(start, '--appendonly')).toBe('yes');
    expect(flag(start, '--appendfsync')).toBe('always');
    expect(flag(start, '--maxmemory-policy')).toBe('noeviction');
    expect(words(redis.healthcheck?.test).join(' ')).toMatch(/redis-cli --no-auth-warning ping\b/);
    expect(redis.volumes?.some((v) => v.endsWith(':/data'))).toBe(true);
    expect(redis.ports).toEqual(['127.0.0.1:${REDIS_PORT:-6379}:6379']);
    // In every profile: the only service without one, so `up redis` and each profile start it.
    expect(redis.profiles).toBeUndefined();
  });

  it('starts on a fresh clone: every env_file is optional, and only redis runs without a profile', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const f of envFiles(s)) expect(f.required, `${name}: env_file ${f.path}`).toBe(false);
    }
    const unprofiled = Object.entries(compose.services)
      .filter(([, s]) => !s.profiles)
      .map(([name]) => name);
    expect(unprofiled).toEqual(['redis']);
  });

  it('publishes every port but the production API on loopback only', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const port of s.ports ?? []) {
        if (name === 'api') continue;
        expect(hostIp(port), `${name}: ${port}`).toBe('127.0.0.1');
      }
    }
  });

  it('production: the worker and the api from one image, on the compose redis, key files read-only in the worker only', () => {
    expect(profiled('production')).toEqual(['api', 'worker']);
    const worker = service('worker');
    const api = service('api');
    expect(worker.image).toBe('usdc-batch:local');
    expect(api.image).toBe(worker.image);
    expect(api.build).toEqual(worker.build);
    expect(worker.build).toMatchObject({ context: '.', target: 'production' });
    expect(words(worker.command)).toEqual(['worker']);
    expect(words(api.command)).toEqual(['serve']);
    for (const s of [worker, api]) {
      expect(envFiles(s)).toEqual([{ path: '.env', required: false }]);
      expect(environment(s)['REDIS_URL']).toBe(COMPOSE_REDIS_URL);
      const dependsOn = s.depends_on as Record<string, { condition?: string }>;
      expect(dependsOn['redis']?.condition).toBe('service_healthy');
      for (const m of mounts(s)) expect(m.mode, `${m.source}`).toBe('ro');
    }
    // Keys stay in the worker (issue 33): only it mounts the key files; the API mounts nothing, and
    // a key written inline in .env is blanked in its environment (environment wins over env_file).
    expect(mounts(worker)).toContainEqual({ source: './secrets', target: '/secrets', mode: 'ro' });
    expect(mounts(api)).toEqual([]);
    expect(environment(api)).toMatchObject({ EVM_PRIVATE_KEY: '', SOLANA_PRIVATE_KEY: '' });
    for (const [name, s] of Object.entries(compose.services).filter(([n]) => n !== 'worker')) {
      expect(
        mounts(s).filter((m) => m.source.startsWith('./secrets')),
        name,
      ).toEqual([]);
    }
    expect(api.ports?.some((p) => String(p).endsWith(':8080'))).toBe(true);
    // serve listens on loopback by default: in the container it must listen on every interface,
    // on the port that is published.
    expect(environment(api)).toMatchObject({ HTTP_HOST: '0.0.0.0', HTTP_PORT: '8080' });
  });

  it('sandbox: the sandbox hands its settings to a worker and an api through a shared volume, nothing to configure', () => {
    expect(profiled('sandbox')).toEqual(['sandbox', 'sandbox-api', 'sandbox-worker']);
    const sandbox = service('sandbox');
    expect(sandbox.build).toMatchObject({ context: '.', target: 'sandbox' });
    const command = words(sandbox.command);
    expect(command[0]).toBe('sandbox');
    const envFile = flag(command, '--write-env') as string;
    // The worker and the API read it as the .env of their working directory (readEnv).
    expect(basename(envFile)).toBe('.env');
    const dir = dirname(envFile);
    const shared = mounts(sandbox).find((m) => m.target === dir);
    expect(shared, 'the env file is on a volume').toBeDefined();
    expect(compose.volumes).toHaveProperty(shared?.source as string);
    // Its throwaway key files go to the same volume (mkdtemp in TMPDIR).
    expect(environment(sandbox)['TMPDIR']).toBe(dir);
    expect(words(sandbox.healthcheck?.test)).toEqual(['CMD', 'test', '-s', envFile]);
    expect(sandbox.ports).toEqual(['127.0.0.1:${SANDBOX_HTTP_PORT:-8081}:8080']);

    for (const [name, command] of [
      ['sandbox-worker', 'worker'],
      ['sandbox-api', 'serve'],
    ] as const) {
      const s = service(name);
      expect(words(s.command), name).toEqual([command]);
      expect(envFiles(s), name).toEqual([]);
      // The sandbox's URLs are loopback ones (and its admin is loopback only): share its network.
      expect(s.network_mode, name).toBe('service:sandbox');
      expect(s.working_dir, name).toBe(dir);
      expect(mounts(s), name).toContainEqual({ source: shared?.source, target: dir, mode: 'ro' });
      expect(environment(s)['REDIS_URL'], name).toBe(COMPOSE_REDIS_URL);
      // Never the production queues, should both run on one Redis.
      expect(environment(s)['QUEUE_PREFIX'], name).toBe('sandbox');
      const dependsOn = s.depends_on as Record<string, { condition?: string; restart?: boolean }>;
      expect(dependsOn['sandbox'], name).toEqual({ condition: 'service_healthy', restart: true });
      expect(dependsOn['redis']?.condition, name).toBe('service_healthy');
      // The production image: the worker runs without the sandbox's packages.
      expect(s.image, name).toBe('usdc-batch:local');
    }
    expect(environment(service('sandbox-api'))).toMatchObject({ HTTP_HOST: '0.0.0.0', HTTP_PORT: '8080' });
    // The sandbox writes the volume as the image's user: the directory is made and owned in the image.
    expect(dockerfileStage('sandbox')).toContain(`RUN mkdir ${dir} && chown node:node ${dir}`);
  });

  it('monitoring: Prometheus scrapes the API with the token from a file and loads the shipped alert rules', () => {
    expect(profiled('monitoring')).toEqual(['grafana', 'jaeger', 'prometheus']);
    const prometheus = service('prometheus');
    expect(words(prometheus.command)).toContain('--config.file=/etc/prometheus/prometheus.yml');
    const mounted = (target: string) => mounts(prometheus).find((m) => m.target === target);
    const config = mounted('/etc/prometheus/prometheus.yml');
    expect(config?.source).toBe('./deploy/prometheus/prometheus-compose.yml');
    const scrape = parseYaml(read(config?.source as string)) as {
      rule_files: string[];
      scrape_configs: {
        job_name: string;
        metrics_path: string;
        authorization: { type: string; credentials_file: string };
        static_configs: { targets: string[] }[];
      }[];
    };
    for (const rules of scrape.rule_files) {
      expect(mounted(rules)?.source, rules).toBe('./deploy/prometheus/alerts.yml');
    }
    expect(scrape.rule_files.length).toBe(1);
    const [job] = scrape.scrape_configs;
    expect(job?.metrics_path).toBe('/metrics');
    expect(job?.authorization.type).toBe('Bearer');
    const secret = prometheus.secrets?.[0] as { source: string; target: string };
    expect(job?.authorization.credentials_file).toBe(`/run/secrets/${secret.target}`);
    expect(compose.secrets?.[secret.source]?.file).toBe('${METRICS_TOKEN_FILE:-./secrets/metrics-token}');
    // The API listens on 8080 in its container, as the production api's environment says.
    expect(job?.static_configs[0]?.targets).toEqual([`api:${environment(service('api'))['HTTP_PORT']}`]);
  });

  it("monitoring with the sandbox profile: a second job scrapes the sandbox's API with the sandbox's metrics token", () => {
    const prometheus = service('prometheus');
    const config = mounts(prometheus).find((m) => m.target === '/etc/prometheus/prometheus.yml');
    const scrape = parseYaml(read(config?.source as string)) as {
      scrape_configs: {
        job_name: string;
        authorization: { type: string; credentials_file: string };
        static_configs: { targets: string[] }[];
      }[];
    };
    const job = scrape.scrape_configs.find((j) => j.job_name === 'usdc-batch-sandbox');
    // The sandbox's API listens in the sandbox service's network namespace, on its HTTP_PORT.
    expect(service('sandbox-api').network_mode).toBe('service:sandbox');
    expect(job?.static_configs[0]?.targets).toEqual([
      `sandbox:${environment(service('sandbox-api'))['HTTP_PORT']}`,
    ]);
    expect(job?.authorization.type).toBe('Bearer');
    // The token file: the sandbox writes it (--metrics-token-file) on a volume Prometheus mounts read-only.
    const tokenFile = flag(words(service('sandbox').command), '--metrics-token-file') as string;
    expect(job?.authorization.credentials_file).toBe(tokenFile);
    const sandboxVolume = mounts(service('sandbox')).find((m) => tokenFile.startsWith(`${m.target}/`));
    expect(sandboxVolume, 'the token file is on a volume of the sandbox').toBeDefined();
    expect(mounts(prometheus)).toContainEqual({
      source: sandboxVolume?.source,
      target: sandboxVolume?.target,
      mode: 'ro',
    });
  });

  it('monitoring: Jaeger receives OTLP over HTTP from the worker, the API and the host, and Grafana reads it', () => {
    const jaeger = service('jaeger');
    expect(jaeger.image).toMatch(/^jaegertracing\/jaeger:2\.[0-9]+\.[0-9]+$/);
    const command = words(jaeger.command);
    expect(flag(command, '--set')).toBe('receivers.otlp.protocols.http.endpoint=0.0.0.0:4318');
    expect(jaeger.ports).toEqual([
      '127.0.0.1:${JAEGER_PORT:-16686}:16686',
      '127.0.0.1:${OTLP_HTTP_PORT:-4318}:4318',
    ]);
    const grafana = service('grafana');
    expect(grafana.depends_on).toContain('jaeger');
    const datasources = parseYaml(read('deploy/grafana/provisioning/datasources/jaeger.yml')) as {
      datasources: { type: string; url: string; uid: string }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'jaeger', uid: 'jaeger', url: 'http://jaeger:16686' }),
    ]);
    // The endpoint the guide gives the worker and the API names the receiver's port.
    const settings = traceSettings(
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' },
      'usdc-batch-worker',
    );
    expect(settings?.endpoint).toBe('http://jaeger:4318/v1/traces');
    expect(read('docs/production.md')).toContain('OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318');
    // The sandbox profile traces only when told where to (the monitoring profile's Jaeger).
    for (const name of ['sandbox-worker', 'sandbox-api']) {
      expect(environment(service(name))['OTEL_EXPORTER_OTLP_ENDPOINT'], name).toBe(
        '${SANDBOX_OTLP_ENDPOINT:-}',
      );
    }
  });

  it('monitoring: Grafana has the compose Prometheus and the shipped dashboard provisioned', () => {
    const grafana = service('grafana');
    const mounted = (source: string) => mounts(grafana).find((m) => m.source === source);
    const provisioning = mounted('./deploy/grafana/provisioning');
    expect(provisioning?.target).toBe('/etc/grafana/provisioning');
    const dashboardMount = mounted('./deploy/grafana/usdc-batch.json');
    const datasources = parseYaml(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { type: string; url: string; isDefault: boolean }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true }),
    ]);
    const providers = parseYaml(read('deploy/grafana/provisioning/dashboards/usdc-batch.yml')) as {
      providers: { type: string; options: { path: string } }[];
    };
    expect(providers.providers[0]?.type).toBe('file');
    expect(dirname(dashboardMount?.target as string)).toBe(providers.providers[0]?.options.path);
    // Every panel's data source is the dashboard's data source variable, which a provisioned
    // dashboard resolves to the default Prometheus (an imported one asks for it).
    const dashboard = JSON.parse(read('deploy/grafana/usdc-batch.json')) as {
      templating: { list: { name: string; type: string; query: string }[] };
    };
    const uids = new Set(
      [...read('deploy/grafana/usdc-batch.json').matchAll(/"uid": "(\$\{[^}]+\})"/g)].map((m) => m[1]),
    );
    expect([...uids]).toEqual(['${DS_PROMETHEUS}']);
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', query: 'prometheus' }),
    );
  });

  it('mounts only paths that exist in the repository, or that the operator provides as documented', () => {
    const operatorProvided = ['./secrets/metrics-token'];
    for (const [name, s] of Object.entries(compose.services)) {
      for (const m of mounts(s).filter((x) => x.source.startsWith('.'))) {
        expect(existsSync(join(ROOT, m.source)), `${name}: ${m.source}`).toBe(true);
      }
    }
    for (const [name, secret] of Object.entries(compose.secrets ?? {})) {
      const file = (secret.file ?? '').replace(/^\$\{[A-Z_]+:-(.*)\}$/, '$1');
      expect(operatorProvided, name).toContain(file);
      expect(existsSync(join(ROOT, dirname(file))), file).toBe(true);
      expect(read('secrets/README.md')).toContain(basename(file));
      expect(guide()).toContain(file.replace(/^\.\//, ''));
    }
    // The key directory is there on a fresh clone, and its content never committed nor built in.
    expect(read('.gitignore').split('\n')).toEqual(
      expect.arrayContaining(['secrets/*', '!secrets/README.md']),
    );
    expect(read('.dockerignore').split('\n')).toContain('secrets');
  });

  it('documents every variable it reads, in the guide (README.md, docs/) and .env.example', () => {
    const referenced = new Set(
      [...composeText.matchAll(/\$\{([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1] as string),
    );
    // TMPDIR is the operating system's (where mkdtemp puts the sandbox's throwaway keys).
    for (const s of Object.values(compose.services).filter(ourImage)) {
      for (const name of Object.keys(environment(s)).filter((n) => n !== 'TMPDIR')) referenced.add(name);
    }
    expect([...referenced].sort()).toEqual(
      expect.arrayContaining([
        'GRAFANA_PORT',
        'HTTP_PORT',
        'JAEGER_PORT',
        'METRICS_TOKEN_FILE',
        'OTLP_HTTP_PORT',
        'PROMETHEUS_PORT',
        'REDIS_PASSWORD',
        'REDIS_PORT',
        'REDIS_URL',
        'SANDBOX_OTLP_ENDPOINT',
      ]),
    );
    const readme = guide();
    const example = Object.keys(parseDotenv(read('.env.example')));
    for (const name of referenced) {
      expect(readme, name).toContain(`\`${name}\``);
      expect(example, name).toContain(name);
    }
  });

  it('builds every image it names from a stage of the Dockerfile', () => {
    for (const [name, s] of Object.entries(compose.services).filter(([, x]) => ourImage(x))) {
      const target = typeof s.build === 'object' ? s.build.target : undefined;
      expect(target, name).toBeDefined();
      expect(dockerfileStage(target as string), name).not.toBe('');
    }
  });
});

/** The lines of one stage of the Dockerfile (`FROM … AS name` up to the next FROM). */
function dockerfileStage(name: string): string {
  const stages = read('Dockerfile').split(/^(?=FROM )/m);
  return stages.find((s) => new RegExp(`^FROM \\S+ AS ${name}$`, 'm').test(s)) ?? '';
}

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('installs the production image without dev or optional packages (the sandbox, the tests)', () => {
    expect(dockerfile).toMatch(/^FROM node:24-slim AS base$/m);
    expect(dockerfileStage('production-deps')).toMatch(/^RUN npm ci --omit=dev --omit=optional\b/m);
    expect(dockerfileStage('production')).toMatch(
      /^COPY --from=production-deps \/app\/node_modules \.\/node_modules$/m,
    );
    expect(dockerfileStage('sandbox-deps')).toMatch(/^RUN npm ci --omit=dev --include=optional\b/m);
    expect(dockerfileStage('sandbox')).toMatch(
      /^COPY --from=sandbox-deps \/app\/node_modules \.\/node_modules$/m,
    );
    // The default target (the last stage) is production.
    expect(dockerfile.split(/^(?=FROM )/m).at(-1)).toMatch(/^FROM base AS production$/m);
  });

  it('runs as the non-root user node, the CLI entry that exists in the repository, the worker by default', () => {
    for (const stage of ['production', 'sandbox']) {
      expect(dockerfileStage(stage), stage).toMatch(/^USER node$/m);
      expect(dockerfileStage(stage), stage).toMatch(/^ENTRYPOINT \["node", "\/app\/bin\/usdc-batch\.js"\]$/m);
    }
    expect(dockerfileStage('production')).toMatch(/^CMD \["worker"\]$/m);
    expect(existsSync(join(ROOT, 'bin/usdc-batch.js'))).toBe(true);
    for (const [, source] of dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)) {
      for (const path of (source ?? '').split(' ')) expect(existsSync(join(ROOT, path)), path).toBe(true);
    }
  });

  it('keeps .env, secrets, node_modules and git history out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['.env', 'secrets', 'node_modules', '.git']) expect(ignored).toContain(entry);
  });
});

describe('.env.example', () => {
  // Every variable of docs/configuration.md.
  const PRODUCT_VARIABLES = [
    'REDIS_URL',
    'ALLOW_VOLATILE_REDIS',
    'QUEUE_PREFIX',
    'TRANSFER_API_URL',
    'TRANSFER_API_KEY',
    'NETWORK',
    'EVM_PRIVATE_KEY',
    'EVM_PRIVATE_KEY_FILE',
    'EVM_KEYSTORE_FILE',
    'EVM_KEYSTORE_PASSWORD_FILE',
    'SOLANA_KEYPAIR_FILE',
    'SOLANA_PRIVATE_KEY',
    'EVM_OWNER_ADDRESSES',
    'SOLANA_ADDRESS',
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
    'APPROVALS_REQUIRED',
    'AUDIT_LOG_FILE',
    'USDC_BATCH_OPERATOR',
    'HTTP_AUTH_FAILURE_LIMIT',
    'HTTP_TRUSTED_PROXIES',
    'APPROVER_TOKEN',
    'METRICS_TOKEN',
    'ACCESS_FILE',
    'NEW_RECIPIENT_POLICY',
    'NEW_RECIPIENT_MAX_USDC',
    'SCREENING_ONCHAIN',
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
    'LOG_FORMAT',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_EXPORTER_OTLP_HEADERS',
    'OTEL_SERVICE_NAME',
    'OTEL_TRACES_SAMPLER',
    'OTEL_TRACES_SAMPLER_ARG',
    'OTEL_SDK_DISABLED',
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
      'METRICS_TOKEN',
      'HOOK_HMAC_SECRET',
    ]) {
      expect(example[name], name).toBe('');
    }
  });

  it('is a valid configuration as it stands, so copying it never starts with errors', () => {
    expect(() => loadConfig(example)).not.toThrow();
  });
});
