import { describe, expect, it } from 'vitest';
import { buildProgram, COMMANDS } from '../../src/cli/main.ts';
import { parseOptions } from '../../src/cli/options.ts';

describe('command-line options, parsed at the edge', () => {
  const SPEC = { batchId: 'text', json: 'flag', role: 'texts' } as const;

  it('types what Commander hands over: a switch false when absent, a value undefined, a list empty', () => {
    expect(parseOptions(SPEC, {})).toEqual({ batchId: undefined, json: false, role: [] });
    expect(parseOptions(SPEC, { batchId: 'b-1', json: true, role: ['viewer', 'metrics'] })).toEqual({
      batchId: 'b-1',
      json: true,
      role: ['viewer', 'metrics'],
    });
  });

  it('refuses a value of another kind, naming the option as it is typed', () => {
    expect(() => parseOptions(SPEC, { batchId: true })).toThrow(
      /--batch-id: expected one value, got boolean/,
    );
    expect(() => parseOptions(SPEC, { json: 'yes' })).toThrow(/--json: expected no value, got string/);
    expect(() => parseOptions(SPEC, { role: 'viewer' })).toThrow(/--role: expected values, got string/);
    expect(() => parseOptions(SPEC, { dryRun: true })).toThrow(/--dry-run: not an option of this command/);
  });

  it('has a module for every command the program declares, each imported by its own path', async () => {
    const names = buildProgram(() => {}).commands.map((c) => c.name());
    expect(names.length).toBeGreaterThan(15);
    for (const name of names) expect(COMMANDS[name], name).toBeTypeOf('function');
    // Loading one runs no command: its module only exports `run`.
    const mod = await COMMANDS['batches']!();
    expect(mod.run).toBeTypeOf('function');
  });
});
