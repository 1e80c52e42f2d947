import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The TypeScript source files under `dir`, tests left out. Fixture folders are left out too unless
 * `fixtures` says otherwise (their modules are code as well: the core's must stay pure).
 */
export function sourceFiles(dir: string, options: { fixtures?: boolean } = {}): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === '__fixtures__' && !options.fixtures ? [] : sourceFiles(path, options);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}
