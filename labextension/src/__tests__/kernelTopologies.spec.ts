import {
  decodeList,
  listExpression,
  NAME_PATTERN,
  saveCode
} from '../kernelTopologies';

describe('kernel-named topologies', () => {
  it('decodes the kernel reply (base64 JSON in Python quotes)', () => {
    const json = JSON.stringify({
      big: { framework: 'pytorch' },
      ü: { backend: 'local' }
    });
    const encoded = Buffer.from(json, 'utf-8').toString('base64');
    expect(decodeList(`'${encoded}'`)).toEqual(JSON.parse(json));
    expect(() => decodeList("'not base64!'")).toThrow('unexpected reply');
  });

  it('never puts user text in code except a checked name', () => {
    const code = saveCode('big.v2', { framework: "pytorch'); import os; ('" });
    expect(code).toContain(".put('big.v2', ");
    expect(code).not.toContain('import os');
    expect(() => saveCode("x'); import os; ('", {})).toThrow('is not valid');
    expect(NAME_PATTERN.test('1abc')).toBe(false);
    expect(listExpression()).toContain('.names()');
  });
});
