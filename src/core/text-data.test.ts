import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeUtf8Text, invalidUtf8Offset, parseJsonlRows, textLines } from './text-data';

const fatal = new TextDecoder('utf-8', { fatal: true });
const decodes = (bytes: Uint8Array) => {
  try {
    fatal.decode(bytes);
    return true;
  } catch {
    return false;
  }
};

describe('text data', () => {
  it('property: the first invalid byte is where the WHATWG decoder first fails', () => {
    // Bytes drawn mostly from the UTF-8 lead and continuation ranges, and valid text cut anywhere.
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 40 }).map((b) => b.map((x) => (x < 96 ? x : 0x80 + (x % 0x78)))),
      fc.tuple(fc.string({ unit: 'binary', maxLength: 20 }), fc.nat()).map(([s, cut]) => {
        const encoded = new TextEncoder().encode(s);
        return encoded.subarray(0, cut % (encoded.length + 1));
      }),
    );
    fc.assert(
      fc.property(bytes, (b) => {
        const offset = invalidUtf8Offset(b);
        expect(offset === -1).toBe(decodes(b));
        if (offset >= 0) expect(decodes(b.subarray(0, offset))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('names the line and column of the first bad byte; drops a byte-order mark; splits CRLF', () => {
    const bytes = Uint8Array.from([0x61, 0x0a, 0x62, 0x63, 0xe9, 0x0a]);
    expect(() => decodeUtf8Text(bytes, 'f.txt')).toThrow(
      /f\.txt line 2 is not UTF-8 \(byte 0xE9 at column 3\)/,
    );
    expect(decodeUtf8Text(Uint8Array.from([0xef, 0xbb, 0xbf, 0x61]), 'f')).toBe('a');
    expect(textLines('\ufeffa\r\nb\n')).toEqual(['a', 'b', '']);
    expect(parseJsonlRows('{"a":1}\r\n\r\n{"b":2}', 'f').map((r) => r.line)).toEqual([1, 3]);
  });
});
