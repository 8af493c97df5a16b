import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DEFAULTS } from '../../src/config/defaults.ts';

const FILE = fileURLToPath(new URL('../../deploy/prometheus/prometheus.yml', import.meta.url));

type ScrapeConfig = {
  job_name: string;
  metrics_path?: string;
  authorization?: { type?: string; credentials?: string; credentials_file?: string };
  static_configs?: { targets: string[] }[];
};

/**
 * The shipped scrape config (issue 23 item 2.10): /metrics needs a bearer token, read from a file —
 * a credential of role metrics, never the hook's (issue 33, finding 1).
 */
describe('deploy/prometheus/prometheus.yml', () => {
  const doc = parseYaml(readFileSync(FILE, 'utf8')) as {
    rule_files?: string[];
    scrape_configs: ScrapeConfig[];
  };

  it('scrapes /metrics on serve’s default port with a metrics credential from a file, never inline', () => {
    const job = doc.scrape_configs.find((c) => c.job_name === 'usdc-batch');
    expect(job?.metrics_path ?? '/metrics').toBe('/metrics');
    expect(job?.authorization?.type ?? 'Bearer').toBe('Bearer');
    expect(job?.authorization?.credentials_file).toMatch(/^\/\S+metrics-token$/);
    expect(job?.authorization).not.toHaveProperty('credentials');
    expect(job?.static_configs?.[0]?.targets).toEqual([`127.0.0.1:${DEFAULTS.HTTP_PORT}`]);
  });

  it('says which credential it needs: role metrics, never HOOK_TOKEN', () => {
    for (const file of [FILE, join(dirname(FILE), 'prometheus-compose.yml')]) {
      const text = readFileSync(file, 'utf8');
      expect(text, file).toMatch(/role metrics/);
      expect(text, file).not.toMatch(/value of HOOK_TOKEN/);
    }
  });

  it('loads the alert rules shipped beside it', () => {
    for (const rules of doc.rule_files ?? [])
      expect(existsSync(join(dirname(FILE), rules)), rules).toBe(true);
    expect(doc.rule_files).toContain('alerts.yml');
  });
});
