import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The README and the pages under docs/: every relative link reaches a file, every #anchor a heading
// of the page it names (as GitHub makes heading ids), offline. The README stays a front door.

const root = join(import.meta.dirname, '..');
const pages = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name)),
];

/** The page's lines outside fenced code blocks, with inline code spans blanked. */
function prose(text: string): string[] {
  let fence: string | undefined;
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      lines.push('');
      continue;
    }
    lines.push(fence === undefined ? line.replace(/`[^`]*`/g, (span) => ' '.repeat(span.length)) : '');
  }
  return lines;
}

/** GitHub's heading id: the heading's text, lower case, punctuation dropped, spaces as hyphens. */
function headingSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorCache = new Map<string, Set<string>>();
/** Every heading id of a Markdown file, repeated headings numbered as GitHub numbers them. */
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors) return anchors;
  anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    const heading = fence === undefined ? /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1] : undefined;
    if (heading === undefined) continue;
    const slug = headingSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** The problem with one link target seen from `file`, or undefined when it resolves. */
function brokenTarget(file: string, target: string): string | undefined {
  if (/^[a-z][a-z\d+.-]*:/i.test(target)) return undefined; // https:, mailto: (not fetched: offline)
  const [path = '', anchor] = target.split('#', 2);
  const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path));
  if (!existsSync(resolved)) return `${target}: no such file`;
  if (anchor === undefined || !resolved.endsWith('.md')) return undefined;
  return anchorsOf(resolved).has(anchor)
    ? undefined
    : `${target}: no heading #${anchor} in ${relative(root, resolved)}`;
}

describe('Markdown pages (README.md, docs/*.md)', () => {
  it('link only to files that exist and to headings those pages have', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of pages) {
      prose(readFileSync(file, 'utf8')).forEach((line, index) => {
        const targets = [
          ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
          ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/g)].map((m) => m[1]!),
        ];
        for (const target of targets) {
          checked += 1;
          const problem = brokenTarget(file, target);
          if (problem) broken.push(`${relative(root, file)}:${index + 1}: ${problem}`);
        }
      });
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });

  it('name only sections that exist when they cite a page as docs/<page>.md#<anchor>', () => {
    const broken: string[] = [];
    for (const file of pages) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/docs\/([\w-]+\.md)#([\w-]+)/g)) {
        const problem = brokenTarget(join(root, 'README.md'), `docs/${m[1]}#${m[2]}`);
        if (problem) broken.push(`${relative(root, file)}: ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('keep the README a front door of at most 250 lines that links every page under docs/', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(250);
    const unlinked = pages
      .filter((file) => file.includes(`${join(root, 'docs')}`))
      .map((file) => relative(root, file))
      .filter((page) => !readme.includes(`](${page}`));
    expect(unlinked).toEqual([]);
  });

  it('make heading ids as GitHub does', () => {
    expect(headingSlug('Train a policy (TensorFlow.js)')).toBe('train-a-policy-tensorflowjs');
    expect(headingSlug('Trackers: TensorBoard and MLflow (`trackers`)')).toBe(
      'trackers-tensorboard-and-mlflow-trackers',
    );
    expect(headingSlug('Ablations (`searcher-rl ablate`, `npm run bench:learning`)')).toBe(
      'ablations-searcher-rl-ablate-npm-run-benchlearning',
    );
    expect(headingSlug('Train with TRL against `serve-env`')).toBe('train-with-trl-against-serve-env');
  });
});
