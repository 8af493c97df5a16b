import { describe, expect, it } from 'vitest';
import {
  LuaReplyError,
  replyArray,
  replyBigint,
  replyInt,
  replyOptionalStrings,
  replyString,
  replyStrings,
} from '../../src/store/lua-reply.ts';
import { hashReply, HashReplyError } from '../../src/store/hash-reply.ts';

describe("a Lua script's reply, read at the store's edge", () => {
  it('reads what Redis answers for a script table, its integers and strings', () => {
    expect(replyArray('s.lua', [1, 'a'])).toEqual([1, 'a']);
    expect(replyInt('s.lua', 3)).toBe(3);
    expect(replyInt('s.lua', '-4')).toBe(-4);
    expect(replyString('s.lua', 'x')).toBe('x');
    expect(replyString('s.lua', null, { orEmpty: true })).toBe('');
    expect(replyBigint('s.lua', '9007199254740993')).toBe(9007199254740993n);
    expect(replyStrings('s.lua', ['a', 'b'])).toEqual(['a', 'b']);
    expect(replyOptionalStrings('s.lua', ['a', null, 2])).toEqual(['a', null, '2']);
  });

  it('refuses a reply of another shape, naming the script and what was wrong', () => {
    expect(() => replyArray('take.lua', 'OK')).toThrow(LuaReplyError);
    expect(() => replyArray('take.lua', 'OK')).toThrow('take.lua: expected an array, got string');
    expect(() => replyInt('take.lua', 1.5)).toThrow('take.lua: expected an integer, got number');
    expect(() => replyString('take.lua', null)).toThrow('take.lua: expected a string, got null');
    expect(() => replyBigint('take.lua', '1e3')).toThrow('take.lua: expected a decimal integer, got string');
    expect(() => replyStrings('take.lua', ['a', ['b']])).toThrow('expected a string, got an array of 1');
    expect(() => replyOptionalStrings('save.lua', 0)).toThrow('save.lua: expected an array, got number');
    expect(() => replyOptionalStrings('save.lua', ['a', {}])).toThrow('expected a string, got object');
  });
});

describe("a hash as a pipeline or MULTI answers HGETALL, read at the store's edge", () => {
  it('reads field/value strings, and refuses another shape, saying what came', () => {
    expect(hashReply('batch b1', { rows: '3', state: 'queued' })).toEqual({ rows: '3', state: 'queued' });
    expect(hashReply('batch b1', {})).toEqual({});
    expect(() => hashReply('batch b1', null)).toThrow(HashReplyError);
    expect(() => hashReply('batch b1', ['rows', '3'])).toThrow('batch b1: expected a hash, got an array');
    expect(() => hashReply('batch b1', { rows: 3 })).toThrow(
      'batch b1 field rows: expected a string, got number',
    );
  });
});
