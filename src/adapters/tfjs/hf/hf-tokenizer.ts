import { InvalidArgumentError } from '../../../core/errors';
import { PROTOCOL_TAG_STRINGS } from '../../../core/protocol/tags';
import type { Tokenizer } from '../../../ports/types';
import { loadWithOptionalPackages } from '../../../provider-utils/optional-package';
import type { TokenizerFiles } from './checkpoint-files';

type HfTokenizerClass = typeof import('@huggingface/tokenizers').Tokenizer;

/** `@huggingface/tokenizers` (an optional peer), loaded when a folder is read. */
export function loadTokenizersPackage(): Promise<HfTokenizerClass> {
  return loadWithOptionalPackages(
    'searcher-rl/tfjs (initFrom)',
    [{ name: '@huggingface/tokenizers', install: 'npm install @huggingface/tokenizers@^0.2.0' }],
    () => import('@huggingface/tokenizers').then((m) => m.Tokenizer),
  );
}

interface AddedToken {
  id: number;
  content: string;
}

/** One past the largest id of the tokenizer's model vocabulary and added tokens. */
function tokenizerSize(json: Record<string, unknown>): number {
  const vocab = (json.model as { vocab?: unknown } | undefined)?.vocab;
  let size = 0;
  if (vocab && typeof vocab === 'object' && !Array.isArray(vocab))
    for (const id of Object.values(vocab)) if (typeof id === 'number') size = Math.max(size, id + 1);
  // Unigram keeps its vocabulary as [piece, score] pairs, the id being the index.
  if (Array.isArray(vocab)) size = vocab.length;
  for (const t of (json.added_tokens as AddedToken[] | undefined) ?? []) size = Math.max(size, t.id + 1);
  return size;
}

/** The content of a token named in tokenizer_config.json (a string, or an AddedToken object). */
const tokenContent = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : typeof (value as { content?: unknown } | null)?.content === 'string'
      ? (value as { content: string }).content
      : undefined;

export interface HfTokenizerSetup {
  tokenizer: Tokenizer;
  files: TokenizerFiles;
  /** The protocol tags added as new tokens, each with the ids the original tokenizer gave its text. */
  addedTags: Array<{ tag: string; id: number; pieces: number[] }>;
  /** Tokens of the tokenizer before tags were added (the pretrained embedding's rows in use). */
  originalSize: number;
}

/**
 * The port's tokenizer over a Hugging Face `tokenizer.json`, with the protocol tags as tokens.
 *
 * A GPT-2-family tokenizer has no protocol tags: `<search>` is three BPE pieces, and `</search>`
 * splits differently after a word than after a space. Each missing tag is added as an added token
 * (matched anywhere, before the BPE, as transformers' `add_tokens` does) with a new embedding row
 * (the mean of its pieces' rows, see pretrained.ts): then a tag is one choice for the policy, a
 * turn stops on one token, and ids stay token-in/token-out, whatever text surrounds the tag. The
 * tags are not `special`, so `decode(skip_special_tokens=True)` (TRL's completions) keeps them.
 * `encode` adds no BOS/EOS: prompts and observations are encoded piece by piece and joined.
 */
export async function createTaggedHfTokenizer(
  tokenizerJson: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown>,
  options: { modelVocabSize: number; eosTokenId?: number; source: string },
): Promise<HfTokenizerSetup> {
  const Hf = await loadTokenizersPackage();
  const original = new Hf(tokenizerJson, tokenizerConfig);
  const originalSize = tokenizerSize(tokenizerJson);
  const added = [...((tokenizerJson.added_tokens as AddedToken[] | undefined) ?? [])];
  const addedTags: HfTokenizerSetup['addedTags'] = [];
  let next = Math.max(originalSize, 0);
  for (const tag of PROTOCOL_TAG_STRINGS) {
    if (added.some((t) => t.content === tag)) continue;
    const pieces = original.encode(tag, { add_special_tokens: false }).ids;
    addedTags.push({ tag, id: next, pieces });
    added.push({
      id: next++,
      content: tag,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: false,
    } as AddedToken);
  }
  const json = { ...tokenizerJson, added_tokens: added };
  // transformers 5 rebuilds some tokenizer classes from their vocabulary: the generic class loads tokenizer.json as it is.
  const config = { ...tokenizerConfig, tokenizer_class: 'TokenizersBackend' };
  const eosText = tokenContent(tokenizerConfig.eos_token);
  // Loaded once the package is known to be there (loadTokenizersPackage above).
  const { createHfTokenizer } = await import('../../../provider-utils/hf-tokenizer');
  const vocabSize = Math.max(options.modelVocabSize, next);
  const tagged = createHfTokenizer(json, config, { vocabSize, eosTokenId: options.eosTokenId ?? -1 });
  const eosTokenId =
    (eosText !== undefined ? tagged.specialTokenId(eosText) : undefined) ?? options.eosTokenId;
  if (eosTokenId === undefined)
    throw new InvalidArgumentError({
      argument: 'initFrom',
      message: `${options.source}: no end-of-sequence token (tokenizer_config.json eos_token, config.json eos_token_id)`,
    });
  // The port's methods close over the tokenizer, not `this`: a copy with the end-of-sequence id found.
  const tokenizer: Tokenizer = { ...tagged, eosTokenId };
  return { tokenizer, files: { tokenizerJson: json, tokenizerConfig: config }, addedTags, originalSize };
}
