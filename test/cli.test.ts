import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeOf } from '../src/cli/args';
import { cliRunOptions } from '../src/cli/progress';
import { MissingDependencyError } from '../src/core/errors';
import {
  loadWithOptionalPackages,
  OPTIONAL_PACKAGE_VERSIONS,
  requireOptionalPackages,
} from '../src/provider-utils/optional-package';

// The CLI's parts tested in this process; the CLI run as a program (tsx src/cli/main.ts: help,
// usage errors, overrides, Ctrl-C, missing packages) is test/cli.e2e.test.ts (npm run test:e2e).
const root = join(import.meta.dirname, '..');

describe('CLI conventions (issue 24, item 22)', () => {
  it('progress lines never run into each other: a log line goes between bars, a shorter line leaves no tail', () => {
    // A terminal: \r returns to the start of the line, ESC[K erases to its end, text overwrites.
    const screen = [''];
    let column = 0;
    const write = (text: string) => {
      for (let i = 0; i < text.length; i++) {
        const row = screen.length - 1;
        if (text.startsWith('\x1b[K', i)) {
          screen[row] = screen[row]!.slice(0, column);
          i += 2;
        } else if (text[i] === '\r') column = 0;
        else if (text[i] === '\n') {
          screen.push('');
          column = 0;
        } else {
          const line = screen[row]!;
          screen[row] = line.slice(0, column) + text[i] + line.slice(column + 1);
          column++;
        }
      }
      return true;
    };
    const options = cliRunOptions((line) => write(`${line}\n`), { isTTY: true, columns: 200, write });
    for (let epoch = 1; epoch <= 12; epoch++) {
      options.onProgress!({
        task: 'SFT warm start',
        done: epoch,
        total: 12,
        detail: `loss ${(1 / epoch).toFixed(3)}`,
      });
      if (epoch === 5) options.onLog!('policy: 1234 parameters');
    }
    options.onProgress!({
      task: 'SFT warm start',
      done: 12,
      total: 12,
      finished: true,
      detail: '200 demonstrations',
    });
    options.onLog!('SFT: demonstrations collected in 1.0 s');
    options.onProgress!({ task: 'phase1', done: 1, total: 2, detail: 'reward 0.100' });
    expect(screen.slice(0, 3)).toEqual([
      'policy: 1234 parameters',
      expect.stringMatching(/^SFT warm start done in \d+s 200 demonstrations$/),
      'SFT: demonstrations collected in 1.0 s',
    ]);
    // Before an error or a stop message, the open bar's line is ended.
    options.endLine();
    expect(screen).toEqual([
      'policy: 1234 parameters',
      expect.stringMatching(/^SFT warm start done in \d+s 200 demonstrations$/),
      'SFT: demonstrations collected in 1.0 s',
      expect.stringMatching(/^phase1 \[#+\.+\] 1\/2 reward 0\.100 ETA \d+s$/),
      '',
    ]);
  });
});

describe('missing optional packages (issue 24, item 20)', () => {
  it('one MissingDependencyError names every missing package with one install line', async () => {
    const load = async (name: string) => {
      if (name === 'sharp' || name === 'openai')
        throw Object.assign(new Error(`Cannot find package '${name}' imported from x.js`), {
          code: 'ERR_MODULE_NOT_FOUND',
        });
      if (name === 'libsql') throw new Error('a native build for another platform');
      return {};
    };
    const error = await requireOptionalPackages(
      'searcher-rl train',
      ['sharp', 'libsql', 'openai', 'sharp'],
      load,
    ).catch((e: unknown) => e);
    expect(MissingDependencyError.isInstance(error)).toBe(true);
    expect((error as MissingDependencyError).packageNames).toEqual(['sharp', 'openai']);
    expect((error as Error).message).toBe(
      "searcher-rl train needs the packages 'sharp', 'openai', which are not installed: npm install sharp@^0.34.5 'openai@>=6.0.0 <7'",
    );
    await expect(requireOptionalPackages('x', ['libsql'], load)).resolves.toBeUndefined();
    // The install line's versions are package.json's.
    const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    expect(OPTIONAL_PACKAGE_VERSIONS).toEqual(pkg.peerDependencies);
    expect(exitCodeOf(error)).toBe(1);
    // A subpath's loader names every listed package that is missing, not only the one Node tripped on.
    const [a, b] = ['searcher-rl-no-such-package-a', 'searcher-rl-no-such-package-b'];
    const subpath = await loadWithOptionalPackages(
      'searcher-rl/example',
      [
        { name: a, install: `npm install ${a}` },
        { name: 'yaml', install: 'npm install yaml' },
        { name: b, install: `npm install ${b}` },
      ],
      () => import(a),
    ).catch((e: unknown) => e);
    expect((subpath as MissingDependencyError).packageNames).toEqual([a, b]);
    expect((subpath as Error).message).toContain(`npm install ${a} ${b}`);
  });
});
