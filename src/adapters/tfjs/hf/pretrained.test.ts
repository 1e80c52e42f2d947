import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../core/errors';
import { PROTOCOL_TAG_STRINGS } from '../../../core/protocol/tags';
import { createVocabularyTokenizer } from '../../../core/protocol/tokenizer';
import type { PolicyCheckpoint } from '../../../ports/policy-backend';
import { decodeSafetensors, float32Of } from '../../../provider-utils/safetensors';
import { useTinyPolicies, withTensorValue } from '../__fixtures__/tiny-policy';

const tiny = useTinyPolicies();
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const model = { layers: 1, width: 8, heads: 2, contextLength: 24 };
/** A tiny policy from a folder (the fixture's model settings left out: the folder sets the model). */
const fromFolder = (
  dir: string,
  over: Parameters<typeof tiny>[0] = {},
  options?: Parameters<typeof tiny>[1],
) => tiny({ initFrom: dir, model: undefined, ...over }, options);

/** A checkpoint's Hugging Face folder on disk, as a run writes it (the optimizer file beside). */
async function folderOf(checkpoint: PolicyCheckpoint): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-hf-'));
  dirs.push(dir);
  for (const [name, bytes] of Object.entries(checkpoint.blobs)) await writeFile(join(dir, name), bytes);
  return dir;
}

async function refusal(promise: Promise<unknown>): Promise<InvalidArgumentError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(
    InvalidArgumentError.isInstance(error),
    `expected an InvalidArgumentError, got ${String(error)}`,
  ).toBe(true);
  return error as InvalidArgumentError;
}

describe('createTfjsPolicy({ initFrom })', () => {
  it("starts from a checkpoint's folder with the same model, tokenizer ids and logits; adds no tags it has", async () => {
    const tokenizer = createVocabularyTokenizer(['Corcor', 'revenue', '2019', 'a', '36, 326']);
    const source = await tiny({ model, seed: 7 }, { tokenizer });
    const dir = await folderOf(await source.save());
    const policy = await fromFolder(dir);
    expect(policy.modelConfig).toEqual(source.modelConfig);
    expect(policy.addedTags).toEqual([]);
    expect(policy.describe().addedTags).toEqual([]);
    expect(policy.tokenizer.eosTokenId).toBe(tokenizer.eosTokenId);
    const text = '<search>Corcor revenue 2019 a [36, 326]</search> zz é';
    const ids = tokenizer.encode(text);
    expect(policy.tokenizer.encode(text)).toEqual(ids);
    expect(policy.tokenizer.decode(ids)).toBe(text);
    for (const tag of PROTOCOL_TAG_STRINGS)
      expect(policy.tokenizer.specialTokenId(tag)).toBe(tokenizer.specialTokenId(tag));
    expect(await policy.logits(ids)).toEqual(await source.logits(ids));
    // Its own checkpoints carry the same folder again.
    const again = await policy.save();
    expect(new TextDecoder().decode(again.blobs['tokenizer.json'])).toBe(
      new TextDecoder().decode((await source.save()).blobs['tokenizer.json']),
    );
  });

  it('a tokenizer without the protocol tags gets them as new tokens, their rows the mean of their pieces', async () => {
    const tokenizer = createVocabularyTokenizer(['search', 'think', 'Corcor']);
    const source = await tiny({ model, seed: 9 }, { tokenizer });
    const dir = await folderOf(await source.save());
    // A foreign tokenizer: the same words and bytes, no tags (only its end-of-sequence token).
    const json = JSON.parse(await readFile(join(dir, 'tokenizer.json'), 'utf8'));
    const tags = new Set(PROTOCOL_TAG_STRINGS);
    json.added_tokens = json.added_tokens.filter((t: { content: string }) => !tags.has(t.content));
    for (const tag of tags) delete json.model.vocab[tag];
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(json));
    const policy = await fromFolder(dir);
    const V = tokenizer.vocabSize;
    expect(policy.addedTags).toEqual(PROTOCOL_TAG_STRINGS);
    expect(policy.describe().addedTags).toEqual(PROTOCOL_TAG_STRINGS);
    expect(policy.tokenizer.vocabSize).toBe(V + PROTOCOL_TAG_STRINGS.length);
    expect(PROTOCOL_TAG_STRINGS.map((t) => policy.tokenizer.specialTokenId(t))).toEqual(
      PROTOCOL_TAG_STRINGS.map((_, i) => V + i),
    );
    const text = 'Corcor search <search>Corcor</search>';
    const ids = policy.tokenizer.encode(text);
    expect(ids).toEqual([...tokenizer.encode('Corcor search '), V + 2, ...tokenizer.encode('Corcor'), V + 3]);
    expect(policy.tokenizer.decode(ids)).toBe(text);
    // The old tokens' logits are the source model's; a tag's embedding row is its pieces' mean.
    const plain = tokenizer.encode('Corcor search think');
    const [mine, theirs] = [await policy.logits(plain), await source.logits(plain)];
    mine.forEach((row, t) => expect(Array.from(row.subarray(0, V))).toEqual(Array.from(theirs[t]!)));
    const embedding = (await policy.save()).blobs['model.safetensors']!;
    const { tensors } = decodeSafetensors(embedding, { argument: 'test' });
    const table = float32Of(tensors.get('transformer.wte.weight')!)!;
    const d = model.width;
    // '<search>' without its tag token: the byte '<', the word 'search', the byte '>'.
    const pieces = [60, V - 3, 62];
    expect(tokenizer.encode('search')).toEqual([V - 3]);
    for (let k = 0; k < d; k++) {
      const mean = pieces.reduce((sum, p) => sum + table[p * d + k]!, 0) / pieces.length;
      expect(table[(V + 2) * d + k]).toBeCloseTo(mean, 6);
    }
  });

  it('refuses what the tfjs model does not compute, naming the file and field', async () => {
    const dir = await folderOf(await (await tiny({ model })).save());
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
    for (const [change, field] of [
      [{ model_type: 'llama' }, /model_type/],
      [{ activation_function: 'gelu' }, /activation_function/],
      [{ layer_norm_epsilon: 1e-6 }, /layer_norm_epsilon/],
      [{ tie_word_embeddings: false }, /tie_word_embeddings/],
      [{ scale_attn_by_inverse_layer_idx: true }, /scale_attn/],
      [{ n_head: 3 }, /n_embd.*divisible/],
      [{ n_layer: 0 }, /n_layer/],
    ] as const) {
      await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, ...change }));
      const error = await refusal(fromFolder(dir));
      expect(error.argument).toBe('initFrom');
      expect(error.message).toContain(join(dir, 'config.json'));
      expect(error.message).toMatch(field);
    }
    // A config whose shapes the weights do not have.
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, n_positions: 48 }));
    expect((await refusal(fromFolder(dir))).message).toMatch(/transformer.wpe.weight.*\[24, 8\].*\[48, 8\]/);
  });

  it('refuses non-finite weights, a missing weights file, and settings the folder sets', async () => {
    const saved = await (await tiny({ model })).save();
    const dir = await folderOf({
      ...saved,
      blobs: {
        ...saved.blobs,
        'model.safetensors': withTensorValue(
          saved.blobs['model.safetensors']!,
          'transformer.h.0.ln_1.bias',
          3,
          Number.NaN,
        ),
      },
    });
    const bad = await refusal(fromFolder(dir));
    expect(bad.message).toMatch(
      /model.safetensors: tensor 'transformer.h.0.ln_1.bias' holds NaN at element 3/,
    );
    expect((await refusal(fromFolder(dir, { model }))).argument).toBe('model');
    const tokenizer = createVocabularyTokenizer(['x']);
    expect((await refusal(fromFolder(dir, {}, { tokenizer }))).argument).toBe('tokenizer');
    await unlink(join(dir, 'model.safetensors'));
    expect((await refusal(fromFolder(dir))).message).toMatch(/model.safetensors is missing/);
    await unlink(join(dir, 'tokenizer.json'));
    expect((await refusal(fromFolder(dir))).message).toContain(join(dir, 'tokenizer.json'));
  });
});
