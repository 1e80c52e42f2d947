import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const packagesPage = readFileSync(join(root, 'docs/packages.md'), 'utf8');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string }>;
};

/** `searcher-rl/x` -> its source file, from the package's exports map. */
const subpaths = Object.entries(packageJson.exports)
  .filter(([key]) => key !== './package.json')
  .map(([key, value]) => ({
    name: key === '.' ? 'searcher-rl' : `searcher-rl/${key.slice(2)}`,
    source: join(
      root,
      (value as { types: string }).types.replace('./dist/', 'src/').replace(/\.d\.ts$/, '.ts'),
    ),
  }));

/** Every export of each entry file (values and types), by the TypeScript checker. */
function exportsByEntry(): Map<string, { values: Set<string>; all: Set<string> }> {
  const program = ts.createProgram(
    subpaths.map((s) => s.source),
    {
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      noEmit: true,
      allowJs: false,
      resolveJsonModule: true,
      types: [],
    },
  );
  const checker = program.getTypeChecker();
  const out = new Map<string, { values: Set<string>; all: Set<string> }>();
  for (const { name, source } of subpaths) {
    const file = program.getSourceFile(source);
    if (!file) throw new Error(`no source for ${name}: ${source}`);
    const symbol = checker.getSymbolAtLocation(file)!;
    const values = new Set<string>();
    const all = new Set<string>();
    for (const exported of checker.getExportsOfModule(symbol)) {
      all.add(exported.name);
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      if (target.flags & ts.SymbolFlags.Value) values.add(exported.name);
    }
    out.set(name, { values, all });
  }
  return out;
}

/** The "What is in the package" table of docs/packages.md: import path -> the names it shows in backticks. */
function packageTable(): Map<string, Set<string>> {
  const start = packagesPage.indexOf('## What is in the package');
  const end = packagesPage.indexOf('\n#', start + 10);
  const rows = packagesPage
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('| `'));
  return new Map(
    rows.map((row) => {
      const [, path, what] = row.split('|').map((cell) => cell.trim());
      const names = [...what!.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1]!);
      return [path!.replace(/`/g, ''), new Set(names)];
    }),
  );
}

describe('docs/packages.md "What is in the package"', () => {
  const table = packageTable();
  const exported = exportsByEntry();

  it('has one row per public subpath', () => {
    expect([...table.keys()].sort()).toEqual(subpaths.map((s) => s.name).sort());
  });

  it('names every runtime export of each subpath, and only names that it exports', () => {
    for (const { name } of subpaths) {
      const { values, all } = exported.get(name)!;
      const shown = table.get(name) ?? new Set<string>();
      expect(
        [...values].filter((v) => !shown.has(v)),
        `${name}: exported but not in the table of docs/packages.md`,
      ).toEqual([]);
      expect(
        [...shown].filter((v) => !all.has(v)),
        `${name}: in the table of docs/packages.md but not exported`,
      ).toEqual([]);
    }
  });
});

describe('docs/method.md', () => {
  const method = readFileSync(join(root, 'docs/method.md'), 'utf8');
  const anchors = new Set(
    [...method.matchAll(/^#+\s+(.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory()
        ? name === '__fixtures__'
          ? []
          : files(path)
        : path.endsWith('.ts')
          ? [path]
          : [];
    });

  it('has every section that a comment cites', () => {
    const broken: string[] = [];
    for (const file of ['src', 'bench', 'examples', 'test'].flatMap((d) => files(join(root, d)))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/docs\/method\.md#([\w-]+)/g)) {
        if (!anchors.has(match[1]!)) broken.push(`${relative(root, file)}: #${match[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('leaves no citation that nothing in the repository resolves', () => {
    const unresolved = ['src', 'bench', 'examples']
      .flatMap((d) => files(join(root, d)))
      .filter((file) => /seed 00\d|DESIGN\b|\bDDAI\b|§/.test(readFileSync(file, 'utf8')));
    expect(unresolved.map((f) => relative(root, f))).toEqual([]);
  });
});
