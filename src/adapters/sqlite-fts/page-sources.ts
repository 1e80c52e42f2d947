import { readdir, readFile, realpath } from 'node:fs/promises';
import { basename as pathBasename, extname, join, sep } from 'node:path';
import { DatasetValidationError, InvalidArgumentError } from '../../core/errors';
import { decodeUtf8Text, parseJsonlRows } from '../../core/text-data';
import { IMAGE_MIME, indexPages, type IndexResult, type PageRecord } from './page-index';

/**
 * Indexes a folder of page images with a text file beside each (`deck1_3.png` + `deck1_3.txt`):
 * the basename is the image's file name. A page image without its text file is an error naming it.
 * With `shownTextExtension` (e.g. `.shown.txt`), a file with that ending beside a page, where
 * there is one, is what hits show instead of the indexed text (`PageRecord.shownText`).
 */
export async function indexPageFolder(
  dbPath: string,
  folder: string,
  options: { textExtension?: string; shownTextExtension?: string } = {},
): Promise<IndexResult> {
  const textExtension = options.textExtension ?? '.txt';
  if (
    options.shownTextExtension !== undefined &&
    (options.shownTextExtension === textExtension || options.shownTextExtension === '')
  )
    throw new InvalidArgumentError({
      argument: 'shownTextExtension',
      message: `must differ from textExtension ('${textExtension}') and not be empty`,
    });
  let names: string[];
  try {
    names = (await readdir(folder)).sort();
  } catch (error) {
    throw new InvalidArgumentError({ argument: 'folder', message: `cannot read '${folder}'`, cause: error });
  }
  const images = names.filter((name) => IMAGE_MIME[extname(name).toLowerCase()]);
  const imageStems = new Set(images.map((name) => name.slice(0, name.length - extname(name).length)));
  // A text file with no image beside it is a text-only page, named by its own file name.
  const textOnly = names.filter(
    (name) =>
      name.endsWith(textExtension) &&
      name.length > textExtension.length &&
      !(options.shownTextExtension !== undefined && name.endsWith(options.shownTextExtension)) &&
      !imageStems.has(name.slice(0, name.length - textExtension.length)),
  );
  if (images.length === 0 && textOnly.length === 0)
    throw new InvalidArgumentError({
      argument: 'folder',
      message: `'${folder}' holds no pages: a page is an image (PNG, JPEG or WebP) with a ${textExtension} file of its text beside it, or a ${textExtension} file alone`,
    });
  const root = await realpath(folder);
  // A link that leads out of the folder would make an outside file (/etc/passwd) searchable.
  // A file that cannot be resolved is left to the read below, which names what is missing.
  const inside = async (path: string) =>
    realpath(path).then(
      (real) => real.startsWith(root + sep),
      () => true,
    );
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const pages: PageRecord[] = [];
  for (const [i, name] of images.entries()) {
    const stem = name.slice(0, name.length - extname(name).length);
    const textPath = join(folder, `${stem}${textExtension}`);
    const imagePath = join(folder, name);
    if (!(await inside(imagePath)))
      throw new DatasetValidationError({
        row: i,
        field: 'imagePath',
        message: `page '${name}' is a link to a file outside '${folder}'`,
      });
    let bytes: Buffer;
    try {
      if (!(await inside(textPath)))
        throw new DatasetValidationError({
          row: i,
          field: 'text',
          message: `the text file of page '${name}' is a link to a file outside '${folder}'`,
        });
      bytes = await readFile(textPath);
    } catch (error) {
      if (DatasetValidationError.isInstance(error)) throw error;
      throw new DatasetValidationError({
        row: i,
        field: 'text',
        message: `page '${name}' has no text file '${pathBasename(textPath)}' beside it`,
        cause: error,
      });
    }
    const decode = (data: Buffer, path: string, field: string) => {
      try {
        return utf8.decode(data);
      } catch (error) {
        throw new DatasetValidationError({
          row: i,
          field,
          message: `'${pathBasename(path)}' is not UTF-8 text; convert it (e.g. iconv -t UTF-8)`,
          cause: error,
        });
      }
    };
    const text = decode(bytes, textPath, 'text');
    let shownText: string | undefined;
    if (options.shownTextExtension !== undefined) {
      const shownPath = join(folder, `${stem}${options.shownTextExtension}`);
      if (!(await inside(shownPath)))
        throw new DatasetValidationError({
          row: i,
          field: 'shownText',
          message: `the shown-text file of page '${name}' is a link to a file outside '${folder}'`,
        });
      const shown = await readFile(shownPath).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return null;
        throw new DatasetValidationError({
          row: i,
          field: 'shownText',
          message: `cannot read '${pathBasename(shownPath)}'`,
          cause: error,
        });
      });
      if (shown) shownText = decode(shown, shownPath, 'shownText');
    }
    pages.push({ basename: name, text, ...(shownText !== undefined && { shownText }), imagePath });
  }
  for (const [j, name] of textOnly.entries()) {
    const row = images.length + j;
    const textPath = join(folder, name);
    if (!(await inside(textPath)))
      throw new DatasetValidationError({
        row,
        field: 'text',
        message: `page '${name}' is a link to a file outside '${folder}'`,
      });
    let bytes: Buffer;
    try {
      bytes = await readFile(textPath);
    } catch (error) {
      throw new DatasetValidationError({
        row,
        field: 'text',
        message: `cannot read '${name}'`,
        cause: error,
      });
    }
    try {
      pages.push({ basename: name, text: utf8.decode(bytes) });
    } catch (error) {
      throw new DatasetValidationError({
        row,
        field: 'text',
        message: `'${name}' is not UTF-8 text; convert it (e.g. iconv -t UTF-8)`,
        cause: error,
      });
    }
  }
  return indexPages(dbPath, pages);
}

const stringOf = (v: unknown) =>
  typeof v === 'string' && v.length > 0
    ? v
    : typeof v === 'number' && Number.isFinite(v)
      ? String(v)
      : undefined;

/**
 * Indexes a retrieval corpus in JSON Lines, one passage a line: Search-R1's layout (`{"id",
 * "contents"}`, the title quoted on the first line of `contents`), or `{"id", "title", "text"}`
 * (DPR's), or `{"basename", "text"}`. A passage's basename is its id (what golden pages name). A
 * row without an id or a text is an error naming the file and the line.
 */
export async function indexCorpusFile(dbPath: string, path: string): Promise<IndexResult> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'corpusPath',
      message: `cannot read '${path}'`,
      cause: error,
    });
  }
  const rows = parseJsonlRows(decodeUtf8Text(bytes, path), path);
  if (rows.length === 0)
    throw new InvalidArgumentError({
      argument: 'corpusPath',
      message: `'${path}' holds no passages (one JSON object a line: {"id", "contents"})`,
    });
  const pages = rows.map(({ line, value }): PageRecord => {
    const basename = stringOf(value.basename) ?? stringOf(value.id) ?? stringOf(value.docid);
    if (basename === undefined)
      throw new DatasetValidationError({
        row: line - 1,
        field: 'id',
        message: `${path} line ${line}: every passage needs an \`id\` (or \`basename\`)`,
      });
    const body = stringOf(value.contents) ?? stringOf(value.text);
    if (body === undefined)
      throw new DatasetValidationError({
        row: line - 1,
        field: 'contents',
        message: `${path} line ${line}: passage '${basename}' has no \`contents\` (or \`text\`)`,
      });
    const title = stringOf(value.title);
    return {
      basename,
      text: title !== undefined && value.contents === undefined ? `${title}\n${body}` : body,
    };
  });
  try {
    return await indexPages(dbPath, pages);
  } catch (error) {
    // indexPages names the row; the file's line is the row plus one (blank lines aside).
    if (DatasetValidationError.isInstance(error))
      throw new DatasetValidationError({
        row: rows[error.row]!.line - 1,
        field: error.field,
        message: `${path} line ${rows[error.row]!.line}: ${error.message}`,
        cause: error,
      });
    throw error;
  }
}
