import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from './support/source-files';

const root = join(import.meta.dirname, '..');

/** Module specifiers: `import … from`, `export … from`, side-effect `import '…'`, `import()`, `require()`. */
function importsOf(text: string): string[] {
  return [
    ...text.matchAll(
      /(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]|import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g,
    ),
  ].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4]!);
}

function imports(path: string): string[] {
  return importsOf(readFileSync(path, 'utf8'));
}

function coreOffences(spec: string): string | null {
  if (
    spec.startsWith('node:') ||
    ['fs', 'path', 'os', 'crypto', 'http', 'https', 'child_process', 'worker_threads'].includes(spec)
  )
    return 'Node built-in';
  if (VENDOR.test(spec)) return 'vendor SDK';
  return null;
}

const VENDOR =
  /^(openai|@google\/genai|undici|sharp|onnxruntime|@tensorflow|libsql|inversify|reflect-metadata|zod|parquet|hyparquet)/;

/**
 * The only imports allowed from one adapter family into another, each exactly: importer (a folder
 * or a file under src/) -> the one file it may import (under src/, without `.ts`).
 * The engines family (src/adapters/engines/: the policies' rollout and training engines and the
 * ONNX graph toolchain) is below every policy: any adapter may import it, and it imports no other
 * family (the rule below holds it to its own folder like any family).
 * - The ICD pointer selector, a small tfjs model, trains with the tfjs family's AdamW on a backend
 *   chosen by its backend selection (one optimizer rule and one backend order, not copies).
 */
const CROSS_FAMILY: ReadonlyArray<{ from: string; to: string }> = [
  { from: 'src/adapters/icd/pointer-selector.ts', to: 'adapters/tfjs/adamw' },
  { from: 'src/adapters/icd/pointer-selector.ts', to: 'adapters/tfjs/backends' },
];

function crossFamilyEdge(importer: string, target: string): boolean {
  const file = target.replace(/\.ts$/, '');
  return CROSS_FAMILY.some(
    (edge) =>
      (edge.from.endsWith('/') ? importer.startsWith(edge.from) : importer === edge.from) && file === edge.to,
  );
}

describe('layering', () => {
  it('keeps src/core pure: only core and ports, no node:*, no vendor SDKs, no inversify', () => {
    const offences: string[] = [];
    for (const file of sourceFiles(join(root, 'src/core'), { fixtures: true })) {
      for (const spec of imports(file)) {
        const where = `${relative(root, file)} imports '${spec}'`;
        const offence = coreOffences(spec);
        if (offence) offences.push(`${where} (${offence})`);
        else if (spec.startsWith('.')) {
          const target = relative(join(root, 'src'), join(file, '..', spec));
          if (!target.startsWith('core') && !target.startsWith('ports'))
            offences.push(`${where} (outside core and ports)`);
        } else offences.push(`${where} (package)`);
      }
    }
    expect(offences).toEqual([]);
  });

  it('keeps src/ports to types that import nothing but other ports (the core depends on them, not the reverse)', () => {
    for (const file of sourceFiles(join(root, 'src/ports'))) {
      for (const spec of imports(file)) {
        const target = relative(join(root, 'src'), join(file, '..', spec));
        expect(
          spec.startsWith('.') && target.startsWith('ports'),
          `${relative(root, file)} imports ${spec}`,
        ).toBe(true);
      }
      expect(readFileSync(file, 'utf8')).not.toMatch(/^\s*(export\s+)?(class|function|const|let)\s/m);
    }
  });

  it('keeps adapters from importing each other or the composition root (they may use core, ports, provider-utils and the rollout engine; and the edges named in CROSS_FAMILY)', () => {
    const adapters = join(root, 'src/adapters');
    for (const file of sourceFiles(adapters)) {
      const family = relative(adapters, file).split('/')[0]!;
      for (const spec of imports(file)) {
        if (!spec.startsWith('.')) continue;
        const target = relative(join(root, 'src'), join(file, '..', spec));
        const ok =
          target.startsWith('core') ||
          target.startsWith('ports') ||
          target.startsWith('provider-utils') ||
          target.startsWith('rollout-engine') ||
          target.startsWith(`adapters/${family}/`) ||
          target.startsWith('adapters/engines/') ||
          crossFamilyEdge(relative(root, file), target);
        expect(ok, `${relative(root, file)} imports ${spec}`).toBe(true);
      }
    }
  });

  it('keeps the helpers for adapter authors, for tests and the rollout engine on core and ports only', () => {
    for (const dir of ['provider-utils', 'testing', 'rollout-engine']) {
      for (const file of sourceFiles(join(root, 'src', dir))) {
        for (const spec of imports(file)) {
          if (!spec.startsWith('.')) continue;
          const target = relative(join(root, 'src'), join(file, '..', spec));
          expect(
            target.startsWith('core') || target.startsWith('ports') || target.startsWith(dir),
            `${relative(root, file)} imports ${spec}`,
          ).toBe(true);
        }
      }
    }
  });

  it('keeps the upper layers in order: the run imports neither the server nor the CLI, the server not the CLI, nothing imports the CLI', () => {
    // What each folder under src/ may not import (the run library is below the server, both below the CLI).
    const forbidden: Record<string, readonly string[]> = {
      run: ['server', 'cli'],
      server: ['cli'],
      curation: ['server', 'cli'],
      icd: ['server', 'cli'],
      protocol: ['run', 'server', 'cli', 'adapters'],
      adapters: ['run', 'server', 'cli'],
      env: ['run', 'server', 'cli'],
    };
    const offences: string[] = [];
    for (const [dir, banned] of Object.entries(forbidden))
      for (const file of sourceFiles(join(root, 'src', dir)))
        for (const spec of imports(file)) {
          if (!spec.startsWith('.')) continue;
          const top = relative(join(root, 'src'), join(file, '..', spec)).split('/')[0]!;
          if (banned.includes(top)) offences.push(`${relative(root, file)} imports ${spec}`);
        }
    for (const file of sourceFiles(join(root, 'src')).filter((f) => !f.includes('/src/cli/')))
      for (const spec of imports(file))
        if (spec.startsWith('.') && relative(join(root, 'src'), join(file, '..', spec)).startsWith('cli/'))
          offences.push(`${relative(root, file)} imports the CLI (${spec})`);
    expect(offences).toEqual([]);
  });

  it('keeps test helpers out of the core (they live in src/testing, the searcher-rl/test subpath)', () => {
    const helpers = sourceFiles(join(root, 'src/core')).filter((file) =>
      /createVirtualClock|relativeError|interceptSessions/.test(readFileSync(file, 'utf8')),
    );
    expect(helpers.map((f) => relative(root, f))).toEqual([]);
  });

  it('keeps every source file under 450 lines', () => {
    const all = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        if (statSync(path).isDirectory())
          return name === '__fixtures__' || name === 'node_modules' ? [] : all(path);
        return path.endsWith('.ts') ? [path] : [];
      });
    const long = ['src', 'test', 'bench', 'examples']
      .flatMap((d) => all(join(root, d)))
      .filter((file) => readFileSync(file, 'utf8').split('\n').length > 450);
    expect(long.map((f) => relative(root, f))).toEqual([]);
  });

  it('keeps test helpers out of the product: no source file imports from test/', () => {
    const offences = sourceFiles(join(root, 'src')).flatMap((file) =>
      imports(file)
        .filter((spec) => spec.startsWith('.') && relative(root, join(file, '..', spec)).startsWith('test/'))
        .map((spec) => `${relative(root, file)} imports ${spec}`),
    );
    expect(offences).toEqual([]);
  });

  it('keeps inversify in the composition root only', () => {
    const users = sourceFiles(join(root, 'src')).filter((file) =>
      imports(file).some((spec) => spec === 'inversify'),
    );
    expect(users.map((f) => relative(root, f))).toEqual(['src/container.ts']);
  });

  it('registers no tfjs kernel at import ("sideEffects": false): registerKernel is called inside functions only', () => {
    const offences = sourceFiles(join(root, 'src')).filter((file) =>
      /^(?:await\s+)?[\w.]*registerKernel\(/m.test(readFileSync(file, 'utf8')),
    );
    expect(offences.map((f) => relative(root, f))).toEqual([]);
  });

  it('uses no decorators', () => {
    for (const file of sourceFiles(join(root, 'src')))
      expect(readFileSync(file, 'utf8'), file).not.toMatch(/^\s*@\w+\(/m);
  });

  it('catches violations with the same check (it can fail)', () => {
    const fake = [
      "import { readFile } from 'node:fs';",
      "import OpenAI from 'openai';",
      "import 'reflect-metadata';",
      "export { Container } from 'inversify';",
      "const sharp = await import('sharp');",
      "import type { Tokenizer } from '../protocol/tokenizer';",
    ].join('\n');
    const specs = importsOf(fake);
    expect(specs).toEqual([
      'node:fs',
      'openai',
      'reflect-metadata',
      'inversify',
      'sharp',
      '../protocol/tokenizer',
    ]);
    expect(specs.filter((s) => coreOffences(s) !== null)).toEqual([
      'node:fs',
      'openai',
      'reflect-metadata',
      'inversify',
      'sharp',
    ]);
    // The cross-family edges are exact: the entry file only, from the named importer only.
    expect(
      crossFamilyEdge('src/adapters/engines/transformer/onnx-rollouts.ts', 'adapters/tfjs/policy.ts'),
    ).toBe(false);
    expect(crossFamilyEdge('src/adapters/llama/policy.ts', 'adapters/onnx/runtime.ts')).toBe(false);
    expect(crossFamilyEdge('src/adapters/onnx/policy.ts', 'adapters/tfjs/transformer.ts')).toBe(false);
    expect(crossFamilyEdge('src/adapters/icd/pointer-selector.ts', 'adapters/tfjs/adamw.ts')).toBe(true);
    expect(crossFamilyEdge('src/adapters/icd/pointer-training.ts', 'adapters/tfjs/adamw.ts')).toBe(false);
    expect(crossFamilyEdge('src/adapters/icd/pointer-selector.ts', 'adapters/tfjs/policy.ts')).toBe(false);
  });
});
