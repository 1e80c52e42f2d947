import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRunConfig } from './config';
import { openRunFolder, readRunFolderConfig, writeJsonAtomic } from './folder';

const OPENAI_KEY = 'sk-folder-canary-1b2c3d4e5f60718293a4';
const GEMINI_KEY = 'AIzaFolderCanary00000000000000000000003';
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-folder-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('the run folder', () => {
  it('continues with other engine settings (threads, lanes, engines), and from a config.json older than them', async () => {
    const base = { runsDir: dir, runId: 'engines' };
    const { runDir } = await openRunFolder(parseRunConfig({ ...base, policy: { trainingLanes: 1 } }));
    await expect(
      openRunFolder(
        parseRunConfig({
          ...base,
          policy: {
            trainingLanes: 3,
            trainingThreads: 2,
            training: 'onnx',
            rollouts: 'tfjs',
            coalesceSessions: false,
          },
        }),
      ),
    ).resolves.toMatchObject({ runDir });
    // A config.json written before trainingThreads, trainingLanes and sft.cropPracticeQuestions existed.
    const old = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8'));
    delete old.policy.trainingThreads;
    delete old.policy.trainingLanes;
    delete old.sft.cropPracticeQuestions;
    await writeJsonAtomic(join(runDir, 'config.json'), old);
    await expect(openRunFolder(parseRunConfig(base))).resolves.toMatchObject({ runDir });
    // The model and the warm start themselves still have to match.
    await expect(
      openRunFolder(parseRunConfig({ ...base, sft: { cropPracticeQuestions: 5 } })),
    ).rejects.toThrow(/other 'sft' settings/);
    await expect(openRunFolder(parseRunConfig({ ...base, policy: { width: 32 } }))).rejects.toThrow(
      /other 'policy' settings/,
    );
  });

  it('keeps no credential in config.json, and continues the same folder with the keys given again', async () => {
    const config = parseRunConfig({
      runsDir: dir,
      runId: 'keys',
      searcher: {
        adapters: {
          generator: { type: 'openai', model: 'gpt-5-mini', apiKey: OPENAI_KEY },
          judge: { type: 'gemini', model: 'gemini-3-flash-preview', apiKey: GEMINI_KEY },
        },
      },
    });
    const { runDir } = await openRunFolder(config);
    const written = await readFile(join(runDir, 'config.json'), 'utf8');
    for (const key of [OPENAI_KEY, GEMINI_KEY]) expect(written).not.toContain(key.slice(0, 8));
    const stored = await readRunFolderConfig(runDir);
    expect(stored.searcher.adapters.generator).toMatchObject({ type: 'openai', model: 'gpt-5-mini' });
    expect(stored.searcher.adapters.generator).not.toHaveProperty('apiKey');
    await expect(openRunFolder(config)).resolves.toMatchObject({ runDir });
    // Once seen in a configuration, a key is redacted from the folder's other files too.
    await writeJsonAtomic(join(runDir, 'summary.json'), { note: `judge said ${GEMINI_KEY}` });
    expect(await readFile(join(runDir, 'summary.json'), 'utf8')).toContain('judge said [redacted]');
  });
});
