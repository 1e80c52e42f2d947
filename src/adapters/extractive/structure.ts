// The structure of a page the extractive reader knows besides prose: `label: value` lines, and
// tables (Markdown, tab-separated runs of lines, or a page that is all comma-separated values).
// Each of their values is a fact with the words that say what it is about:
// a line's label and the page's heading above it; a table cell's column header and the other
// cells of its row. Everything else on the page is prose, read sentence by sentence.

import { textLines } from '../../core/text-data';

/** One value of a page with the words that place it. */
export interface Fact {
  /** Where it is said: its line's label, or its column's header ('' when the table has none). */
  label: string;
  /** What it is said of: the heading above a `label: value` line, or the other cells of a table row. */
  subject: string;
  /** The value as written. */
  value: string;
  /** Its place among the page's facts and sentences (the page's reading order). */
  position: number;
}

/** A page split into its facts and its prose lines (each with its place in the page). */
export interface PageStructure {
  facts: Fact[];
  prose: Array<{ text: string; position: number }>;
}

// A `label: value` line: a label of one to five words with a letter and no sentence mark, a
// colon, a value of at most MAX_VALUE_WORDS words (a longer one is prose: "2001: A Space Odyssey
// is a 1968 film ..."). Bounded repetitions only, so that no line makes the pattern backtrack for long.
const KEY_VALUE =
  /^\s*([\p{L}\p{N}][\p{L}\p{N}'’&/-]{0,40}(?:[ \t]+[\p{L}\p{N}'’&/-]{1,40}){0,4})[ \t]*:[ \t]*(\S.*)$/u;
const MAX_VALUE_WORDS = 16;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const SEPARATOR_CELL = /^:?-{3,}:?$/;
const HEADING_MARKS = /^\s*#{1,6}\s+/;
const MAX_HEADING_WORDS = 8;
/** A row of more cells is not read as a table (and no row costs more than this squared). */
const MAX_COLUMNS = 32;

/**
 * A line's comma-separated cells (RFC 4180 quoting: `"a, b"` is one cell, `""` a quote inside
 * one), or null when a quote is left open.
 */
function csvCells(line: string): string[] | null {
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell.trim() === '') {
      quoted = true;
      cell = '';
    } else if (c === ',') {
      cells.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  if (quoted) return null;
  cells.push(cell.trim());
  return cells;
}

const words = (cell: string) => (cell === '' ? 0 : cell.split(/\s+/).length);

/** Words of a column name at most (a header of longer cells is a line of prose). */
const MAX_HEADER_WORDS = 5;

/**
 * The rows of a page that is all comma-separated values: every non-empty line splits into the
 * same number (2 to MAX_COLUMNS) of cells, there are at least three lines (a header, two rows: a
 * pair of lines is more often two pairs than a table), no line ends a sentence
 * (`.`, `!`, `?`), each cell is short (a value, not a clause) and every header cell is a short
 * name with a letter. Prose with commas is not one.
 */
function csvPage(lines: readonly string[]): string[][] | null {
  const filled = lines.filter((l) => l.trim() !== '');
  if (filled.length < 3 || filled.some((l) => TABLE_ROW.test(l) || /[.!?]\s*$/.test(l))) return null;
  const rows: string[][] = [];
  for (const line of filled) {
    const cells = csvCells(line);
    if (!cells || cells.length < 2 || cells.length > MAX_COLUMNS) return null;
    if (rows.length > 0 && cells.length !== rows[0]!.length) return null;
    if (cells.some((c) => words(c) > MAX_VALUE_WORDS)) return null;
    rows.push(cells);
  }
  return rows[0]!.every((c) => /\p{L}/u.test(c) && words(c) <= MAX_HEADER_WORDS) ? rows : null;
}

/** A tab-separated line's cells, or null for a line with no tab. */
const tsvCells = (line: string) => (line.includes('\t') ? line.split('\t').map((c) => c.trim()) : null);

const cellsOf = (row: string) =>
  row
    .trim()
    .slice(1, -1)
    .split('|')
    .map((c) => c.trim());

/**
 * The facts and prose of one page. A run of `|`-delimited lines is a table: its first row is the
 * header when the second is a Markdown separator (`| --- |`); every other row gives one fact a
 * non-empty cell (a row of more than 32 cells makes its run prose). A run of tab-separated lines
 * is a table under its first line, and so is a page that is all comma-separated values (csvPage). A `label: value` line (a short label, a short value)
 * gives one fact whose subject is the nearest prose line
 * above it of at most eight words (the page's heading). Lines of neither kind are prose.
 */
export function structureOf(text: string): PageStructure {
  const lines = textLines(text);
  const facts: Fact[] = [];
  const prose: PageStructure['prose'] = [];
  let heading = '';
  let position = 0;
  /** A table's facts: each non-empty cell of each row under its column's header. */
  const table = (header: readonly string[], rows: readonly string[][]) => {
    for (const row of rows)
      for (const [j, cell] of row.entries()) {
        if (cell === '') continue;
        const others = row.filter((c, k) => k !== j && c !== '');
        facts.push({
          label: header[j] ?? '',
          subject: [heading, ...others].filter((s) => s !== '').join(' '),
          value: cell,
          position: position++,
        });
      }
  };
  const csv = csvPage(lines);
  if (csv) {
    table(csv[0]!, csv.slice(1));
    return { facts, prose };
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    // A run of two or more tab-separated lines of one cell count (2 to MAX_COLUMNS): a table whose
    // first line is the header.
    const tabbed = tsvCells(line);
    if (tabbed && tabbed.length >= 2 && tabbed.length <= MAX_COLUMNS) {
      let end = i;
      while (end + 1 < lines.length && tsvCells(lines[end + 1]!)?.length === tabbed.length) end++;
      if (end > i) {
        const rows = lines.slice(i, end + 1).map((l) => tsvCells(l)!);
        table(rows[0]!, rows.slice(1));
        i = end;
        continue;
      }
    }
    if (TABLE_ROW.test(line)) {
      let end = i;
      while (end + 1 < lines.length && TABLE_ROW.test(lines[end + 1]!)) end++;
      const rows = lines.slice(i, end + 1).map(cellsOf);
      if (rows.some((row) => row.length > MAX_COLUMNS)) {
        for (const row of lines.slice(i, end + 1)) prose.push({ text: row.trim(), position: position++ });
        i = end;
        continue;
      }
      const hasHeader = rows.length > 1 && rows[1]!.every((c) => SEPARATOR_CELL.test(c));
      table(hasHeader ? rows[0]! : [], rows.slice(hasHeader ? 2 : 0));
      i = end;
      continue;
    }
    const kv = KEY_VALUE.exec(line);
    const value = kv?.[2]?.trim() ?? '';
    if (
      kv !== null &&
      /\p{L}/u.test(kv[1]!) &&
      !/^https?$/i.test(kv[1]!) &&
      value.split(/\s+/).length <= MAX_VALUE_WORDS
    ) {
      facts.push({ label: kv[1]!, subject: heading, value, position: position++ });
      continue;
    }
    const text = line.replace(HEADING_MARKS, '').trim();
    prose.push({ text, position: position++ });
    // A short line heads what follows it; a paragraph does not.
    if (text.split(/\s+/).length <= MAX_HEADING_WORDS) heading = text;
  }
  return { facts, prose };
}
