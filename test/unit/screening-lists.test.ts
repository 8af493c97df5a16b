import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressSet } from '../../src/domain/address-set.ts';
import { ConfigError } from '../../src/domain/errors.ts';
import { readListFile } from '../../src/config/screening/list-file.ts';
import { loadScreeningLists } from '../../src/config/screening/screening-lists.ts';

// The samples are made in OFAC's published layouts (samples/screening/), not copied from OFAC.
const SAMPLES = join(import.meta.dirname, '../../samples/screening');
const DAY = 86_400_000;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'screening-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('OFAC sdn_advanced.xml', () => {
  it('takes every Digital Currency Address feature, whatever the asset, and DateOfIssue', async () => {
    const list = await readListFile(join(SAMPLES, 'sdn_advanced.xml'));
    expect(list.format).toBe('ofac-advanced');
    expect(list.date).toBe('2026-11-20');
    // ETH (listed twice in two cases: once), USDC upper-case, SOL; XBT counted as other.
    expect(list.counts).toEqual({ evm: 2, solana: 1, other: 1 });
    expect(list.keys.has('0x8cf798a5d316af599dde1d8dbef58a98f47a6ddc')).toBe(true);
    expect(list.keys.has('0x9562d44269effdccf34aff1bad67fcfb1c25b318')).toBe(true);
    expect(list.keys.has('7nwuiCcGFJQiBrRVbv57L5GZTrimDZF5sFBVwJNnPQbW')).toBe(true);
    // A Place of Birth feature whose text looks like an address is not an address.
    expect(list.keys.has('0x5c9f8c59c442585ca1076f17afd0fe77534bfdf1')).toBe(false);
  });

  it('finds features declared before their FeatureType', async () => {
    const path = join(dir, 'late-types.xml');
    await writeFile(
      path,
      `<Sanctions><DateOfIssue><Year>2026</Year><Month>2</Month><Day>3</Day></DateOfIssue>
       <DistinctParties><DistinctParty><Profile><Feature FeatureTypeID="9"><FeatureVersion>
       <VersionDetail>0x3a8e9b7c8d340626315788b48060469dfd080775</VersionDetail></FeatureVersion></Feature></Profile></DistinctParty></DistinctParties>
       <ReferenceValueSets><FeatureTypeValues><FeatureType ID="9">Digital Currency Address - BSC</FeatureType></FeatureTypeValues></ReferenceValueSets></Sanctions>`,
    );
    const list = await readListFile(path);
    expect(list.date).toBe('2026-02-03');
    expect(list.keys.size).toBe(1);
    expect(list.keys.has('0x3A8E9B7C8D340626315788B48060469DFD080775')).toBe(true);
  });

  it('refuses a file without its date, or cut off', async () => {
    const noDate = join(dir, 'no-date.xml');
    await writeFile(noDate, '<Sanctions><ReferenceValueSets/></Sanctions>');
    await expect(readListFile(noDate)).rejects.toThrow(/DateOfIssue/);
    const cut = join(dir, 'cut.xml');
    await writeFile(cut, '<Sanctions><DateOfIssue><Year>2026</Year>');
    await expect(readListFile(cut)).rejects.toThrow(/not well-formed XML/);
  });
});

describe('OFAC sdn.xml (classic)', () => {
  it('takes idList ids of type Digital Currency Address, and Publish_Date MM/DD/YYYY', async () => {
    const list = await readListFile(join(SAMPLES, 'sdn.xml'));
    expect(list.format).toBe('ofac-classic');
    expect(list.date).toBe('2026-11-21');
    expect(list.counts).toEqual({ evm: 1, solana: 1, other: 1 });
    expect(list.keys.has('0x3a8e9b7c8d340626315788b48060469dfd080775')).toBe(true);
    expect(list.keys.has('2G3DJsQcfn4AJ91dvp4RcDD8E8wCFNZwoxXB4u8VEQk3')).toBe(true);
    // A passport number is not an address, whatever it looks like.
    expect(list.keys.has('0x5c9f8c59c442585ca1076f17afd0fe77534bfdf1')).toBe(false);
  });

  it('refuses a Publish_Date not in MM/DD/YYYY', async () => {
    const path = join(dir, 'bad-date.xml');
    await writeFile(
      path,
      '<sdnList><publshInformation><Publish_Date>2026-11-21</Publish_Date></publshInformation></sdnList>',
    );
    await expect(readListFile(path)).rejects.toThrow(/MM\/DD\/YYYY/);
  });
});

describe('plain lists', () => {
  it('reads one address per line, comments and the date line', async () => {
    const list = await readListFile(join(SAMPLES, 'plain.txt'));
    expect(list.format).toBe('plain');
    expect(list.date).toBe('2026-11-22');
    expect(list.counts).toEqual({ evm: 1, solana: 1, other: 1 });
  });

  it("takes the file's modification time without a date line", async () => {
    const path = join(dir, 'undated.txt');
    await writeFile(path, '0x9562d44269effdccf34aff1bad67fcfb1c25b318\n');
    const when = new Date('2026-05-06T12:00:00Z');
    await utimes(path, when, when);
    expect((await readListFile(path)).date).toBe('2026-05-06');
  });

  it('reads a large list from its bytes as from its text: CRLF, a BOM, a chunk cut mid-address, no last newline', async () => {
    // 30,000 addresses are ~1.3 MB: the file is read in 1 MiB chunks, so one address is cut in two.
    const evm = Array.from(
      { length: 30_000 },
      (_, i) => `0x${(i * 7919 + 1).toString(16).padStart(40, 'ab')}`,
    );
    const lines = [
      '\uFEFF# Liste für 2026 — one address per line',
      '# date: 2026-03-04',
      ...evm.map((a, i) =>
        i % 3 === 0 ? `${a}\r` : i % 5 === 0 ? `  ${a.toUpperCase().replace('0X', '0x')}` : a,
      ),
      `${evm[9]}   # listed again, a comment after it`,
      '0x' + 'g'.repeat(40),
      '7nwuiCcGFJQiBrRVbv57L5GZTrimDZF5sFBVwJNnPQbW',
    ];
    const path = join(dir, 'large.txt');
    await writeFile(path, lines.join('\n'));
    const list = await readListFile(path);
    expect(list.date).toBe('2026-03-04');
    expect(list.counts).toEqual({ evm: 30_000, solana: 1, other: 1 });
    expect(evm.every((a) => list.keys.has(a.toUpperCase().replace('0X', '0x')))).toBe(true);
    expect(list.keys.has('0x' + '0'.repeat(40))).toBe(false);
    // Lines read from their bytes are counted too: the malformed line is named by its number.
    const bad = join(dir, 'large-bad.txt');
    await writeFile(bad, [...evm, `${evm[0]} ${evm[1]}`].join('\n'));
    await expect(readListFile(bad)).rejects.toThrow(/line 30001\b/);
  });

  it('refuses two words on a line, naming the line', async () => {
    const path = join(dir, 'two.txt');
    await writeFile(path, '# date: 2026-01-01\n0x9562d44269effdccf34aff1bad67fcfb1c25b318 0x3a8e\n');
    await expect(readListFile(path)).rejects.toThrow(/line 2/);
  });
});

describe('the lists in force', () => {
  it('answers EVM lookups without regard to case, Solana exactly, naming the list and its date', async () => {
    const names = ['sdn_advanced.xml', 'sdn.xml', 'plain.txt'].map((n) => join(SAMPLES, n));
    const lists = await loadScreeningLists(names, 7 * DAY);
    expect(lists.lookup('0x8CF798A5D316AF599DDE1D8DBEF58A98F47A6DDC')).toEqual({
      list: names[0],
      date: '2026-11-20',
    });
    expect(lists.lookup('0x3a8e9b7c8d340626315788b48060469dfd080775')?.date).toBe('2026-11-21');
    expect(lists.lookup('32yrr7b3r4WbBmcm2rM5Mu1MdTpJ2UG9URYNJf785bBz')?.list).toBe(names[2]);
    expect(lists.lookup('32YRR7B3R4WBBMCM2RM5MU1MDTPJ2UG9URYNJF785BBZ')).toBeUndefined();
    expect(lists.lookup('0x5c9f8c59c442585ca1076f17afd0fe77534bfdf1')).toBeUndefined();
    // Stale once the oldest list is older than the maximum age.
    const issued = Date.UTC(2026, 10, 20);
    expect(lists.staleReason(issued + 7 * DAY)).toBeUndefined();
    expect(lists.staleReason(issued + 7 * DAY + 1)).toMatch(/sdn_advanced\.xml of 2026-11-20/);
  });

  it('names the file that cannot be read or parsed', async () => {
    const bad = join(dir, 'bad.xml');
    await writeFile(bad, '<html><body>not a list</body></html>');
    const err = await loadScreeningLists([join(dir, 'missing.txt'), bad], DAY).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/missing\.txt: no such file/);
    expect((err as Error).message).toMatch(/bad\.xml: .*<html>/);
  });

  it('keeps a list in force when its file fails to reload, and takes a good one', async () => {
    const path = join(dir, 'reload.txt');
    await writeFile(path, '# date: 2026-11-01\n0x9562d44269effdccf34aff1bad67fcfb1c25b318\n');
    const lists = await loadScreeningLists([path], DAY);
    await writeFile(path, '# date: 2026-13-01\n0x3a8e9b7c8d340626315788b48060469dfd080775\n');
    const failed = await lists.reload(true);
    expect(failed.failed[0]?.message).toMatch(/line 1/);
    expect(lists.lookup('0x9562d44269effdccf34aff1bad67fcfb1c25b318')).toBeDefined();
    await writeFile(path, '# date: 2026-11-02\n0x3a8e9b7c8d340626315788b48060469dfd080775\n');
    const ok = await lists.reload(false);
    expect(ok.reloaded).toHaveLength(1);
    expect(lists.lookup('0x9562d44269effdccf34aff1bad67fcfb1c25b318')).toBeUndefined();
    expect(lists.lookup('0x3a8e9b7c8d340626315788b48060469dfd080775')?.date).toBe('2026-11-02');
  });
});

describe('the address set', () => {
  it('agrees with a Set of the same addresses, grown from empty or sized at once', () => {
    const bytes = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 256));
    const hex = (b: number[]) => `0x${b.map((x) => x.toString(16).padStart(2, '0')).join('')}`;
    const listed = Array.from({ length: 40_000 }, () => hex(bytes(20)));
    const others = Array.from({ length: 40_000 }, () => hex(bytes(20)));
    const expected = new Set(listed);
    for (const set of [new AddressSet(), new AddressSet(listed.length)]) {
      for (const a of listed) set.add(a);
      expect(set.size).toBe(expected.size);
      expect(listed.filter((a) => !set.has(a.toUpperCase().replace('0X', '0x')))).toEqual([]);
      expect(others.filter((a) => set.has(a) !== expected.has(a))).toEqual([]);
    }
  });

  it('answers for many addresses, vanity prefixes included, EVM in any case, Solana exactly', () => {
    const set = new AddressSet();
    const listed: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      // Vanity addresses share their first bytes: the hash takes every byte.
      const a = `0x0000000000${(i + 1).toString(16).padStart(30, '0')}`;
      listed.push(a);
      expect(set.add(a)).toEqual({ kind: 'evm', added: true });
    }
    expect(set.add(listed[7]?.toUpperCase().replace('0X', '0x') as string).added).toBe(false);
    expect(set.size).toBe(5_000);
    expect(listed.every((a) => set.has(a.toUpperCase().replace('0X', '0x')))).toBe(true);
    expect(set.has('0x0000000001000000000000000000000000000000')).toBe(false);
    expect(set.add('7nwuiCcGFJQiBrRVbv57L5GZTrimDZF5sFBVwJNnPQbW')).toEqual({ kind: 'solana', added: true });
    expect(set.has('7nwuiCcGFJQiBrRVbv57L5GZTrimDZF5sFBVwJNnPQbW')).toBe(true);
    expect(set.has('7NWUICCGFJQIBRRVBV57L5GZTRIMDZF5SFBVWJNNPQBW')).toBe(false);
    expect(set.add('1BoatSLRHtKNngkdXEeobR76b53LETtpyT')).toEqual({ kind: 'other', added: false });
    expect(set.has('0x0000000000000000000000000000000000000000')).toBe(false);
    expect(set.add('0x0000000000000000000000000000000000000000').added).toBe(true);
    expect(set.has('0x0000000000000000000000000000000000000000')).toBe(true);
  });
});
