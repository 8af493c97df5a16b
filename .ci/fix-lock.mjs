// Adds the lockfile entries of native packages' platform builds that this registry does not serve
// (npm then leaves them out, and `npm ci` refuses the lock as out of sync): msgpackr-extract's,
// anvil's (@foundry-rs/anvil) and LiteSVM's. Only other platforms' builds are missing here, and
// npm skips them by their os/cpu/libc, so the entries need no tarball. Idempotent.
import { readFileSync, writeFileSync } from 'node:fs';
const file = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(file, 'utf8'));
const PARENTS = ['msgpackr-extract', '@foundry-rs/anvil', 'litesvm'];
const CPU = { x64: 'x64', amd64: 'x64', arm64: 'arm64', arm: 'arm' };
let added = 0;
for (const parentName of PARENTS) {
  const parent = lock.packages[`node_modules/${parentName}`];
  for (const [name, version] of Object.entries(parent?.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    const m = /-(darwin|linux|win32)-(arm64|x64|amd64|arm)(?:-(gnu|musl))?$/.exec(name);
    if (!m) throw new Error(`cannot tell the platform of ${name}`);
    const [, os, cpu, libc] = m;
    lock.packages[key] = {
      version,
      cpu: [CPU[cpu]],
      ...(libc ? { libc: [libc === 'gnu' ? 'glibc' : 'musl'] } : {}),
      license: parent.license ?? 'MIT',
      optional: true,
      os: [os],
    };
    added++;
  }
}
const [root, ...rest] = Object.keys(lock.packages);
const order = [root, ...rest.sort((a, b) => a.localeCompare(b, 'en'))];
lock.packages = Object.fromEntries(order.map((k) => [k, lock.packages[k]]));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} entries`);
