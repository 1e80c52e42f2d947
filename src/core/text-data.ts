import { DatasetValidationError } from './errors';

// The one reader of text data files (JSONL datasets, task files, store logs, ICD records, config
// files): bytes are UTF-8 or refused, naming the line; a leading byte-order mark is accepted; CRLF
// line ends are accepted; blank lines are skipped; every JSONL row is a JSON object. No `node:*`
// here: callers read the bytes, this decides what they mean.

/** `FILE line N`, or `line N` for text that came from no file. */
const where = (source: string | undefined, line: number) =>
  source ? `${source} line ${line}` : `line ${line}`;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Where the first byte that is not well-formed UTF-8 (RFC 3629: no overlongs, no surrogates) is, or -1. */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let follow: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) follow = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      follow = 2;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      follow = 3;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f;
    } else return i;
    for (let k = 1; k <= follow; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i;
    }
    i += follow + 1;
  }
  return -1;
}

/** The 1-based line and byte column of a byte offset. */
function lineOf(bytes: Uint8Array, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

/**
 * Bytes as UTF-8 text, without a leading byte-order mark. Bytes that are not UTF-8 (Latin-1,
 * Windows-1252, UTF-16) are a DatasetValidationError naming `source` and the line of the first bad
 * byte (row: that line, 0-based), never text with replacement characters in it.
 */
export function decodeUtf8Text(bytes: Uint8Array, source?: string): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    const offset = invalidUtf8Offset(bytes);
    const { line, column } = lineOf(bytes, Math.max(offset, 0));
    const byte = bytes[offset]?.toString(16).toUpperCase().padStart(2, '0') ?? '?';
    throw new DatasetValidationError({
      row: line - 1,
      field: '(encoding)',
      message: `${where(source, line)} is not UTF-8 (byte 0x${byte} at column ${column}); save the file as UTF-8 (from Latin-1: iconv -f latin1 -t utf-8)`,
      cause: error,
    });
  }
}

/** The text without a leading byte-order mark. */
const withoutBom = (text: string) => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/** Lines without their line ends (LF or CRLF); a leading byte-order mark is dropped. */
export function textLines(text: string): string[] {
  const lines = withoutBom(text).split('\n');
  return lines.map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
}

/**
 * The value of a JSON text (a leading byte-order mark dropped), or a DatasetValidationError naming
 * `source` (field `(file)`, row -1).
 */
export function parseJsonText(text: string, source: string | undefined): unknown {
  try {
    return JSON.parse(withoutBom(text));
  } catch (error) {
    throw new DatasetValidationError({
      row: -1,
      field: '(file)',
      message: `${source ?? 'the text'} is not valid JSON: ${(error as Error).message.slice(0, 200)}`,
      cause: error,
    });
  }
}

/** One JSONL row: its 1-based line and its object. */
export interface JsonlRow {
  line: number;
  value: Record<string, unknown>;
}

export interface JsonlOptions {
  /** JSON.parse's reviver for each row. */
  reviver?: (key: string, value: unknown) => unknown;
  /** The error's `field` for a line that is not JSON (default `(json)`; the ICD reader's has always been `(line)`). */
  invalidJsonField?: string;
}

const describeValue = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;

/**
 * The values of JSON Lines text, each with its 1-based line: blank lines skipped, every other line
 * one JSON value, or a DatasetValidationError naming `source` and the line (row: the 0-based line).
 */
export function parseJsonlLines(
  text: string,
  source: string | undefined,
  options: JsonlOptions = {},
): Array<{ line: number; value: unknown }> {
  const values: Array<{ line: number; value: unknown }> = [];
  textLines(text).forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      values.push({ line: index + 1, value: JSON.parse(line, options.reviver) });
    } catch (error) {
      throw new DatasetValidationError({
        row: index,
        field: options.invalidJsonField ?? '(json)',
        message: `${where(source, index + 1)} is not valid JSON: ${(error as Error).message.slice(0, 200)}`,
        cause: error,
      });
    }
  });
  return values;
}

/**
 * The rows of JSON Lines text (`parseJsonlLines`), every one a JSON object: a line holding null, a
 * number, a string or an array is a DatasetValidationError naming `source` and the line.
 */
export function parseJsonlRows(
  text: string,
  source: string | undefined,
  options: JsonlOptions = {},
): JsonlRow[] {
  return parseJsonlLines(text, source, options).map(({ line, value }) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new DatasetValidationError({
        row: line - 1,
        field: '(row)',
        message: `${where(source, line)} is ${describeValue(value)}, not a JSON object ({"field": value, ...} on one line)`,
      });
    return { line, value: value as Record<string, unknown> };
  });
}

/** `decodeUtf8Text` then `parseJsonlRows`: a JSONL file's bytes as its rows. */
export function readJsonlRows(
  bytes: Uint8Array,
  source: string | undefined,
  options: JsonlOptions = {},
): JsonlRow[] {
  return parseJsonlRows(decodeUtf8Text(bytes, source), source, options);
}
