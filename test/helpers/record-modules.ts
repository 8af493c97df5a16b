/*
 * Preloaded into a CLI process (NODE_OPTIONS=--import=<this file>) by tests that check what it
 * loads: every module URL it loads, by import or require, is written one per line to the file
 * USDC_MODULE_RECORD names when it exits.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    loaded.add(url);
    return nextLoad(url, context);
  },
});
process.on('exit', () => {
  const file = process.env['USDC_MODULE_RECORD'];
  if (file) writeFileSync(file, [...loaded].join('\n'));
});
