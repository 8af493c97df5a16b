// Adds the lockfile entries of msgpackr-extract's platform packages that this registry does not
// serve (npm then leaves them out, and `npm ci` refuses the lock as out of sync). Idempotent.
import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8'));
const parent = lock.packages['node_modules/msgpackr-extract'];
let added = 0;
for (const [name, version] of Object.entries(parent?.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const [, os, cpu] = /-(darwin|linux|win32)-(arm64|x64|arm)$/.exec(name);
  lock.packages[key] = { version, cpu: [cpu], license: 'MIT', optional: true, os: [os] };
  added++;
}
const [root, ...rest] = Object.keys(lock.packages);
const order = [root, ...rest.sort((a, b) => a.localeCompare(b, 'en'))];
lock.packages = Object.fromEntries(order.map((k) => [k, lock.packages[k]]));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} entries`);
