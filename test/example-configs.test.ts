import { readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRunConfig } from '../src/run/config';

// Every YAML config under examples/ loads with the run's own parser (its fields checked by name,
// its paths resolved from its folder): an example that drifted from the schema fails here, not for
// the user who copies it. Nothing is run: the data a config names may be fetched later.
const root = join(import.meta.dirname, '..');

async function yamlFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await yamlFiles(path)));
    else if (/\.ya?ml$/.test(entry.name)) out.push(path);
  }
  return out.sort();
}

describe('example configs', async () => {
  const files = await yamlFiles(join(root, 'examples'));

  it('finds the examples', () => {
    expect(files.length).toBeGreaterThanOrEqual(7);
  });

  it.each(files.map((f) => [relative(root, f), f]))('%s loads', async (_name, file) => {
    const config = await loadRunConfig(file);
    expect(config.phases.length).toBeGreaterThan(0);
  });
});
