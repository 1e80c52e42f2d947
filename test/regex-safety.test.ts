import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { check } from 'recheck';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * No regular expression in src/ can stall a request (issue 41; docs/architecture.md#regular-expressions):
 * every regex literal and every `new RegExp(...)` is checked for super-linear backtracking
 * (exponential or polynomial) with recheck: its native checker (the recheck-linux-x64 package, an
 * optional dependency npm installs beside it), else the same checker in pure JavaScript; offline.
 * Constant patterns are read from the source; patterns built at run time (templates, joins of
 * lists) are captured by wrapping the RegExp constructor while their modules load and their
 * parsers run.
 */
const root = join(import.meta.dirname, '..');
// recheck's default backend ('auto'): the native binary where its package is installed (about 6x
// faster than the Scala.js checker, which it falls back to), run in a subprocess; offline.
// Others own these folders while they are written; they are checked like the rest once they land.
const SKIPPED = ['src/adapters/llama/'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === '__fixtures__' ? [] : sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

interface FoundRegex {
  where: string;
  source: string;
  flags: string;
}

function scan(): { constant: FoundRegex[]; dynamicFiles: string[] } {
  const constant: FoundRegex[] = [];
  const dynamicFiles = new Set<string>();
  for (const file of sourceFiles(join(root, 'src'))) {
    const path = relative(root, file).replaceAll('\\', '/');
    if (SKIPPED.some((s) => path.startsWith(s))) continue;
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const where = (n: ts.Node) => `${path}:${sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1}`;
    const visit = (n: ts.Node): void => {
      if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = n.getText(sf);
        const end = text.lastIndexOf('/');
        constant.push({ where: where(n), source: text.slice(1, end), flags: text.slice(end + 1) });
      }
      if (ts.isNewExpression(n) || ts.isCallExpression(n)) {
        if (n.expression.getText(sf) === 'RegExp' && n.arguments?.[0]) {
          const [pattern, flags] = n.arguments;
          if (ts.isStringLiteral(pattern!) || ts.isNoSubstitutionTemplateLiteral(pattern!))
            constant.push({
              where: where(n),
              source: pattern.text,
              flags: flags && ts.isStringLiteral(flags) ? flags.text : '',
            });
          else dynamicFiles.add(path);
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return { constant, dynamicFiles: [...dynamicFiles] };
}

async function vulnerable(found: readonly FoundRegex[]): Promise<string[]> {
  const seen = new Set<string>();
  const unique = found.filter((r) => {
    const key = `${r.flags}/${r.source}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const results = await Promise.all(unique.map((r) => check(r.source, r.flags, { timeout: 20_000 })));
  return unique.flatMap((r, i) => {
    const result = results[i]!;
    return result.status === 'vulnerable'
      ? [`${r.where} /${r.source}/${r.flags}: ${result.complexity.summary}`]
      : [];
  });
}

describe('regular expressions cannot stall a request (issue 41)', () => {
  const { constant, dynamicFiles } = scan();

  it('finds the regexes of src/', () => {
    expect(constant.length).toBeGreaterThan(100);
    expect(dynamicFiles).toContain('src/core/protocol/location.ts');
  });

  it('every constant regex in src/ is free of super-linear backtracking', async () => {
    expect(await vulnerable(constant)).toEqual([]);
  }, 120_000);

  it('every regex built at run time (module constants and the parsers that build them) is free of it too', async () => {
    const captured: FoundRegex[] = [];
    const original = globalThis.RegExp;
    globalThis.RegExp = new Proxy(original, {
      construct(target, args: [string | RegExp, string?]) {
        const made = Reflect.construct(target, args) as RegExp;
        captured.push({ where: 'new RegExp at run time', source: made.source, flags: made.flags });
        return made;
      },
    });
    try {
      for (const file of dynamicFiles) await import(join(root, file));
      const { parseAction } = await import('../src/core/protocol/actions');
      const { createProtocolTokenizer } = await import('../src/core/protocol/tokenizer');
      parseAction('<think>x</think>\n<search>q</search><bbox>[1, 2, 3, 4]</bbox>');
      createProtocolTokenizer().encode('<search>q</search><information>i</information>');
    } finally {
      globalThis.RegExp = original;
    }
    expect(captured.length).toBeGreaterThanOrEqual(dynamicFiles.length);
    expect(await vulnerable(captured)).toEqual([]);
  }, 120_000);
});
