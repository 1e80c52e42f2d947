import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string }>;
};

/** The source file of each public subpath (`searcher-rl`, `searcher-rl/run`, ...), from the exports map. */
const entries = Object.entries(packageJson.exports)
  .filter(([key]) => key !== './package.json')
  .map(([, value]) =>
    join(root, (value as { types: string }).types.replace('./dist/', 'src/').replace(/\.d\.ts$/, '.ts')),
  );

describe('the public surface', () => {
  it('keeps the root export to at most 80 names (the facade, the run, config, errors, port types, the RL math)', () => {
    const program = ts.createProgram([join(root, 'src/index.ts')], {
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      target: ts.ScriptTarget.ES2022,
      skipLibCheck: true,
      noEmit: true,
      resolveJsonModule: true,
      types: [],
    });
    const checker = program.getTypeChecker();
    const names = checker
      .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(join(root, 'src/index.ts'))!)!)
      .map((s) => s.name);
    expect(names.length, names.join(', ')).toBeLessThanOrEqual(80);
    for (const internal of ['buildUpdateBatch', 'createEpisodeStages', 'runEvent', 'ACTION_TAG_PATTERN'])
      expect(names).not.toContain(internal);
  });

  it('has no implementation.ts barrels: each public name is listed once', () => {
    const barrels = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((p) =>
      p.endsWith('implementation.ts'),
    );
    expect(barrels).toEqual([]);
  });

  it('keeps the CLI thin: it imports public entry points (and its own files) only, no adapter or core internals', () => {
    const cli = join(root, 'src/cli');
    const offences: string[] = [];
    for (const name of readdirSync(cli).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
      const file = join(cli, name);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from\s+|import\(\s*)['"](\.[^'"]+)['"]/g)) {
        const target = resolve(dirname(file), m[1]!);
        const path = target.endsWith('.ts') ? target : `${target}.ts`;
        if (dirname(path) === cli || entries.includes(path)) continue;
        offences.push(
          `${relative(root, file)} imports ${m[1]} (${relative(root, path)} is not a public entry point)`,
        );
      }
    }
    expect(offences).toEqual([]);
  });

  it('builds every public subpath: each export of package.json is an entry of tsup.config.ts', () => {
    const tsup = readFileSync(join(root, 'tsup.config.ts'), 'utf8');
    const missing = Object.entries(packageJson.exports)
      .filter(([key]) => key !== './package.json')
      .map(([, value]) =>
        (value as unknown as { import: string }).import.replace('./dist/', '').replace(/\.js$/, ''),
      )
      .filter((entry) => !tsup.includes(`'${entry}':`) && !tsup.includes(`${entry}:`));
    expect(missing).toEqual([]);
  });
});
