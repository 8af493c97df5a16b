import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { REPO_ROOT } from './cli.ts';

/** Debian's Chromium (`apt-get install chromium`); .ci/run installs it where apt is available. */
export const CHROMIUM = '/usr/bin/chromium';

/** Why a browser test cannot run here, or undefined when it can. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
}

/** Where screenshots go: `test-output/<name>/` at the repository root (gitignored). */
export function screenshotDir(name: string): string {
  const dir = join(REPO_ROOT, 'test-output', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Headless Chromium with a fresh profile (`--user-data-dir`, which Playwright takes as the
 * persistent context's directory), sending `headers` with every request.
 */
export async function launchChromium(
  headers: Record<string, string> = {},
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'usdc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    extraHTTPHeaders: headers,
    viewport: { width: 1400, height: 1000 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
