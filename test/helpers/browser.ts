import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { REPO_ROOT } from './cli.ts';

/** Debian's Chromium (`apt-get install chromium`), or the one CHROMIUM_PATH names. */
export const CHROMIUM_PATH = process.env['CHROMIUM_PATH'] || '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return undefined;
  } catch {
    return `no Chromium at ${CHROMIUM_PATH} (install Debian's chromium — .ci/run does when apt is available — or set CHROMIUM_PATH)`;
  }
}

/** Where tests leave screenshots for people to look at (gitignored). */
export function screenshotDir(name: string): string {
  const dir = join(REPO_ROOT, 'test-output', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export type Browser = { readonly context: BrowserContext; close(): Promise<void> };

/**
 * Headless Chromium from the system with a fresh profile, sending `headers` with every request
 * (the API's bearer token) or logging in with HTTP Basic `credentials`.
 */
export async function launchBrowser(
  options: {
    headers?: Record<string, string>;
    credentials?: { username: string; password: string };
    viewport?: { width: number; height: number };
    isMobile?: boolean;
  } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'usdc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
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
    viewport: options.viewport ?? { width: 1280, height: 900 },
    ...(options.isMobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
    ...(options.headers ? { extraHTTPHeaders: options.headers } : {}),
    ...(options.credentials ? { httpCredentials: options.credentials } : {}),
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
