import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  ConfigValidationError,
  MissingDependencyError,
  ModelLayoutError,
  NotTrainableError,
} from '../../core/errors';
import { PROTOCOL_TAG_STRINGS } from '../../core/protocol/tags';
import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import { incrementalLogProbError, rollTwoTurns } from '../../testing/policy-contract';
import { ONNX_OPTIONAL_PACKAGES } from './packages';
import { createOnnxPolicy, type OnnxPolicy } from './policy';
import type { OnnxPolicySettings } from './settings';

// The fixtures are real Optimum exports of tiny models made by transformers, with reference.json
// computed by transformers (scripts/make-onnx-fixture.py; python/tests/test_onnx_fixture.py keeps
// reference.json equal to what the pinned transformers computes). These tests need no Python.
const FIXTURES = join(import.meta.dirname, '__fixtures__');
/** A GPT-2 export: position_ids is an input. */
const FIXTURE = join(FIXTURES, 'tiny-gpt');
/** A Gemma export: no position_ids (the graph counts positions from the past length), 1 key/value head. */
const GEMMA = join(FIXTURES, 'tiny-gemma');
interface Reference {
  versions: Record<string, string>;
  vocabSize: number;
  eosTokenId: number;
  addedTokens: Record<string, number>;
  encodings: Record<string, number[]>;
  prompts: Array<{ text: string; promptIds: number[]; greedy: Array<{ tokenId: number; logProb: number }> }>;
}
const readReference = async (dir: string) =>
  JSON.parse(await readFile(join(dir, 'reference.json'), 'utf8')) as Reference;
const reference = await readReference(FIXTURE);
const gemmaReference = await readReference(GEMMA);

const created: OnnxPolicy[] = [];
async function tiny(overrides: Partial<OnnxPolicySettings> = {}): Promise<OnnxPolicy> {
  const policy = await createOnnxPolicy({ modelDir: FIXTURE, intraOpThreads: 1, seed: 3, ...overrides });
  created.push(policy);
  return policy;
}
afterAll(async () => {
  for (const p of created) await p.dispose();
});

const greedy = { temperature: 0, topP: 1 };

describe('OnnxPolicy on an Optimum-layout export', () => {
  it('reads the model folder: sizes from the graph and config.json, eos from generation_config.json', async () => {
    const policy = await tiny();
    expect(policy.modelConfig).toEqual({
      layers: 2,
      heads: 2,
      headWidth: 16,
      vocabSize: reference.vocabSize,
      contextLength: 256,
      hasPositionIds: true,
      eosTokenIds: [reference.eosTokenId],
    });
    expect(policy.contextLength).toBe(256);
    expect(policy.trainable).toBe(false);
    expect(policy.describe()).toEqual({ backend: 'onnxruntime-cpu', addedTags: [] });
    expect(policy.tokenizer.eosTokenId).toBe(reference.eosTokenId);
    expect((await tiny({ contextLength: 64 })).contextLength).toBe(64);
  });

  it('tokenizes with tokenizer.json as the reference does, the protocol tags as single tokens', async () => {
    const tok = (await tiny()).tokenizer;
    for (const [text, ids] of Object.entries(reference.encodings)) {
      expect(tok.encode(text)).toEqual(ids);
      expect(tok.decode(ids)).toBe(text);
    }
    for (const p of reference.prompts) expect(tok.encode(p.text)).toEqual(p.promptIds);
    for (const tag of PROTOCOL_TAG_STRINGS) {
      expect(tok.specialTokenId(tag)).toBe(reference.addedTokens[tag]);
      expect(tok.tokenText(reference.addedTokens[tag]!)).toBe(tag);
    }
    expect(tok.specialTokenId('apple pie')).toBeUndefined();
  });

  /**
   * Greedy decoding from each prompt until the reference's first end-of-sequence token (then the
   * turn ends 'eos') or its length ('length'): the same tokens, log-probs within `tolerance`.
   */
  async function expectGreedyAsReference(policy: OnnxPolicy, data: Reference, tolerance: number) {
    let worst = 0;
    for (const p of data.prompts) {
      const eos = p.greedy.findIndex((s) => s.tokenId === data.eosTokenId);
      const expected = eos >= 0 ? p.greedy.slice(0, eos + 1) : p.greedy;
      const session = await policy.begin([p.promptIds]);
      const [out] = await session.generateTurn([0], { stopAfter: [], maxTokens: p.greedy.length, ...greedy });
      await session.end();
      expect(out!.steps.map((s) => s.tokenId)).toEqual(expected.map((s) => s.tokenId));
      out!.steps.forEach((s, k) => {
        worst = Math.max(worst, Math.abs(s.logProb - expected[k]!.logProb));
        expect(s.position).toBe(p.promptIds.length + k);
      });
      expect(out!.finishReason).toBe(eos >= 0 ? 'eos' : 'length');
    }
    expect(worst).toBeLessThan(tolerance);
    return worst;
  }

  it("greedy tokens and their log-probs equal transformers' (float64, no cache) within 1e-4", async () => {
    expect(reference.versions).toMatchObject({
      'optimum-onnx': expect.any(String),
      transformers: expect.any(String),
    });
    await expectGreedyAsReference(await tiny(), reference, 1e-4);
  });

  it('numeric contract: cached decoding equals a full forward without cache (logProbs) within 1e-5', async () => {
    const policy = await tiny();
    for (const options of [greedy, { temperature: 1, topP: 1 }, { temperature: 0.7, topP: 0.9 }]) {
      const { maxError, positionsHold } = await incrementalLogProbError(policy, options);
      expect(positionsHold).toBe(true);
      expect(maxError).toBeLessThan(1e-5);
    }
  });

  it('stops right after a closing tag, as its own token or spelled out', async () => {
    const policy = await tiny();
    const tok = policy.tokenizer;
    const p = reference.prompts[0]!;
    const text = tok.decode(p.greedy.map((s) => s.tokenId));
    const session = await policy.begin([p.promptIds, p.promptIds]);
    const [byTag, spelled] = await session.generateTurn([0, 1], {
      stopAfter: ['</search>', '</answer>'],
      maxTokens: 40,
      ...greedy,
    });
    expect(byTag!.finishReason).toBe('stop');
    const decoded = tok.decode(byTag!.steps.map((s) => s.tokenId));
    expect(decoded.endsWith('</search>')).toBe(true);
    expect(text.startsWith(decoded)).toBe(true);
    expect(decoded).toBe(text.slice(0, text.indexOf('</search>') + '</search>'.length));
    await session.end();
    // A stop string that is not one token stops once the decoded text ends with it.
    const again = await policy.begin([p.promptIds]);
    const [out] = await again.generateTurn([0], { stopAfter: ['apple size'], maxTokens: 40, ...greedy });
    expect(out!.finishReason).toBe('stop');
    expect(tok.decode(out!.steps.map((s) => s.tokenId)).endsWith('<search>apple size')).toBe(true);
    expect(spelled!.steps.length).toBe(byTag!.steps.length);
  });

  it('decodes concurrent sessions in shared forwards with the same numbers as one at a time', async () => {
    const sampled = { temperature: 1, topP: 0.9 };
    const alone = await tiny({ seed: 21 });
    const ra = await rollTwoTurns(alone, sampled);
    const rb = await rollTwoTurns(alone, sampled);
    const together = await tiny({ seed: 21 });
    const [rc, rd] = await Promise.all([rollTwoTurns(together, sampled), rollTwoTurns(together, sampled)]);
    // Same seeds and session indices: the same tokens, and log-probs equal to float32 rounding.
    expect(rc.sequences).toEqual(ra.sequences);
    expect(rd.sequences).toEqual(rb.sequences);
    rc.steps.forEach((row, i) =>
      row.forEach((s, k) => expect(Math.abs(s.logProb - ra.steps[i]![k]!.logProb)).toBeLessThan(1e-5)),
    );
    const apart = await tiny({ seed: 21, coalesceSessions: false });
    const [re] = await Promise.all([rollTwoTurns(apart, sampled), rollTwoTurns(apart, sampled)]);
    expect(re.sequences).toEqual(ra.sequences);
    expect(re.steps.map((row) => row.map((s) => s.logProb))).toEqual(
      ra.steps.map((row) => row.map((s) => s.logProb)),
    );
  });

  it('logProbs(batch) gives the generation TokenSteps their own log-probs, at the sampling temperature', async () => {
    const policy = await tiny();
    const p = reference.prompts[1]!;
    const session = await policy.begin([p.promptIds]);
    const [out] = await session.generateTurn([0], {
      stopAfter: ['</search>'],
      maxTokens: 30,
      temperature: 0.8,
      topP: 0.95,
    });
    await session.end();
    const sequence = [...p.promptIds, ...out!.steps.map((s) => s.tokenId)];
    const positions = out!.steps.map((s) => s.position);
    const [scored] = await policy.logProbs({
      inputIds: [sequence, [1, 2]],
      positions: [positions, []],
      temperature: 0.8,
    });
    scored!.forEach((lp, k) => expect(Math.abs(lp - out!.steps[k]!.logProb)).toBeLessThan(1e-5));
    await expect(policy.logProbs({ inputIds: [[1, 2]], positions: [[0]] })).rejects.toThrow(/position 0/);
  });

  it('a Gemma export (no position_ids, 1 key/value head) decodes as transformers does, cached and not', async () => {
    const policy = await tiny({ modelDir: GEMMA });
    expect(policy.modelConfig).toEqual({
      layers: 2,
      heads: 1,
      headWidth: 16,
      vocabSize: gemmaReference.vocabSize,
      contextLength: 256,
      hasPositionIds: false,
      eosTokenIds: [gemmaReference.eosTokenId],
    });
    await expectGreedyAsReference(policy, gemmaReference, 1e-4);
    for (const options of [greedy, { temperature: 1, topP: 1 }]) {
      const { maxError, positionsHold } = await incrementalLogProbError(policy, options);
      expect(positionsHold).toBe(true);
      expect(maxError).toBeLessThan(1e-5);
    }
    // Sessions at different past lengths decode together as they do alone.
    const sampled = { temperature: 1, topP: 0.9 };
    const alone = await tiny({ modelDir: GEMMA, seed: 5 });
    const ra = await rollTwoTurns(alone, sampled);
    const rb = await rollTwoTurns(alone, sampled);
    const together = await tiny({ modelDir: GEMMA, seed: 5 });
    const [rc, rd] = await Promise.all([rollTwoTurns(together, sampled), rollTwoTurns(together, sampled)]);
    expect(rc.sequences).toEqual(ra.sequences);
    expect(rd.sequences).toEqual(rb.sequences);
  });

  it('runs rollouts only: update is a NotTrainableError; a checkpoint carries the sampling state, not weights', async () => {
    const policy = await tiny();
    const error = await policy
      .update({ inputIds: [[1, 2, 3]], positions: [[1]] }, () => ({ value: 0, gradNewLogProbs: [[0]] }))
      .catch((e: unknown) => e);
    expect(NotTrainableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/does not train.*evaluation and rollout collection/);
    await policy.begin([[1, 2]]);
    const checkpoint = await policy.save();
    expect(checkpoint.blobs).toEqual({});
    expect(checkpoint.metadata.sessionCounter).toBe(1);
    const other = await tiny();
    await other.load(checkpoint);
    expect((await other.save()).metadata.sessionCounter).toBe(1);
    await expect(
      other.load({ format: 'searcher-rl.tfjs-transformer.v1', metadata: {}, blobs: {} }),
    ).rejects.toThrow(/loads no weights/);
  });

  it('asked for CUDA where onnxruntime-node has no CUDA provider, says what to install', async () => {
    const error = await createOnnxPolicy({ modelDir: FIXTURE, executionProvider: 'cuda' }).catch(
      (e: unknown) => e,
    );
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('cuda');
    expect((error as Error).message).toMatch(/--onnxruntime-node-install=cuda12/);
    expect((error as Error).message).toMatch(/CUDA 12 and cuDNN/);
  });

  it('validates its settings and the model folder by name', async () => {
    await expect(createOnnxPolicy({ modelDir: FIXTURE, threads: 2 } as never)).rejects.toThrow(
      ConfigValidationError,
    );
    await expect(
      createOnnxPolicy({ modelDir: FIXTURE, executionProvider: 'webgpu' as never }),
    ).rejects.toThrow(/createOnnxPolicy\.executionProvider/);
    await expect(createOnnxPolicy({ modelDir: join(FIXTURE, 'nowhere') })).rejects.toThrow(
      /Invalid argument 'modelDir': cannot read .*nowhere/,
    );
  });

  it('a config.json that disagrees with the graph is a ModelLayoutError naming the field', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'onnx-policy-'));
    try {
      for (const file of ['model.onnx', 'tokenizer.json', 'generation_config.json'])
        await copyFile(join(FIXTURE, file), join(dir, file));
      const config = JSON.parse(await readFile(join(FIXTURE, 'config.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      await writeFile(
        join(dir, 'config.json'),
        JSON.stringify({ ...config, vocab_size: 500, n_positions: undefined }),
      );
      const error = await createOnnxPolicy({ modelDir: dir }).catch((e: unknown) => e);
      expect(ModelLayoutError.isInstance(error)).toBe(true);
      expect((error as ModelLayoutError).mismatches).toEqual([
        `config.json has vocab_size 500, the graph's logits ${reference.vocabSize}`,
        'config.json names no max_position_embeddings / n_positions (the context length); for a model without one (ALiBi: BLOOM, MPT) set contextLength',
      ]);
      // A model with relative positions only names no context length: the setting gives it.
      await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, n_positions: undefined }));
      const policy = await tiny({ modelDir: dir, contextLength: 200 });
      expect(policy.contextLength).toBe(200);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('searcher-rl/onnx without its packages', () => {
  it('a missing onnxruntime-node or @huggingface/tokenizers is a MissingDependencyError with the install command', async () => {
    for (const name of ['onnxruntime-node', '@huggingface/tokenizers']) {
      const missing = () =>
        Promise.reject(
          Object.assign(
            new Error(
              `Cannot find package '${name}' imported from /app/node_modules/searcher-rl/dist/adapters/onnx/implementation.js`,
            ),
            { code: 'ERR_MODULE_NOT_FOUND' },
          ),
        );
      const error = await loadWithOptionalPackages('searcher-rl/onnx', ONNX_OPTIONAL_PACKAGES, missing).catch(
        (e: unknown) => e,
      );
      expect(MissingDependencyError.isInstance(error)).toBe(true);
      expect((error as MissingDependencyError).packageName).toBe(name);
      expect((error as Error).message).toContain(`npm install ${name}`);
    }
  });
});
