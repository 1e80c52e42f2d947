import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A file a curation command writes: its name under `curation/` and how to write it to a path. */
export interface CurationFile {
  name: string;
  write: (path: string) => Promise<void>;
}

export const textFile = (name: string, text: string): CurationFile => ({
  name,
  write: (path) => writeFile(path, text),
});

export const jsonFile = (name: string, data: unknown): CurationFile =>
  textFile(name, `${JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 2)}\n`);

/**
 * Writes a command's files into `dir` as one step: each to a temp file first, then all renamed
 * into place, so a command that fails leaves the previous files (or none), never half a set, and
 * running it again replaces them instead of adding to them.
 */
export async function writeCurationFiles(dir: string, files: readonly CurationFile[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  const temp = (name: string) => join(dir, `.${name}.${process.pid}.tmp`);
  try {
    for (const file of files) await file.write(temp(file.name));
    for (const file of files) await rename(temp(file.name), join(dir, file.name));
  } finally {
    for (const file of files) await rm(temp(file.name), { force: true });
  }
}
