import { InvalidArgumentError } from '../../../core/errors';
import { firstNonFinite, float32Values, parameterAt } from '../../../core/finite-values';
import type { PolicyCheckpoint } from '../../../ports/policy-backend';
import type { Tokenizer } from '../../../ports/types';
import { decodeSafetensors, encodeSafetensors, float32Of } from '../../../provider-utils/safetensors';
import type { TransformerConfig } from '../../engines/transformer/transformer';
import { gpt2ConfigJson, gpt2GenerationConfigJson, gpt2TensorName } from './gpt2';
import { tokenizerJsonOf } from './tokenizer-json';

/**
 * The files of a tfjs checkpoint (format v2): a Hugging Face model folder (`config.json`,
 * `model.safetensors`, `generation_config.json`, `tokenizer.json`, `tokenizer_config.json`) that
 * `AutoModelForCausalLM.from_pretrained` and `AutoTokenizer.from_pretrained` load, with AdamW's
 * moments in `optimizer.safetensors` beside them (as transformers' Trainer keeps `optimizer.pt`
 * in its checkpoint folders; `from_pretrained` ignores it). Format v1 (`weights.f32`,
 * `adam-m.f32`, `adam-v.f32`: the parameters end to end) is still read.
 */

export const MODEL_FILE = 'model.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
const json = (value: unknown) => new TextEncoder().encode(`${JSON.stringify(value, null, 2)}\n`);

/** Tokenizer files of a policy made from a Hugging Face folder (kept as they were, tags added). */
export interface TokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

/**
 * `tokenizer.json` and `tokenizer_config.json` for the policy's tokenizer: those it was read from,
 * or the protocol / vocabulary tokenizer written out; none for another tokenizer (the model
 * still loads in transformers, the tokenizer not).
 */
export function tokenizerFilesOf(
  tokenizer: Tokenizer,
  contextLength: number,
  from?: TokenizerFiles,
): TokenizerFiles | null {
  if (from) return from;
  let tokenizerJson: Record<string, unknown>;
  try {
    tokenizerJson = tokenizerJsonOf(tokenizer);
  } catch {
    return null;
  }
  return {
    tokenizerJson,
    tokenizerConfig: {
      // The generic class loads tokenizer.json as written (transformers 5's GPT2Tokenizer would rebuild a byte-level BPE).
      tokenizer_class: 'TokenizersBackend',
      eos_token: '<eos>',
      pad_token: '<eos>',
      add_bos_token: false,
      add_eos_token: false,
      clean_up_tokenization_spaces: false,
      model_max_length: contextLength,
    },
  };
}

export interface ParameterValues {
  name: string;
  shape: readonly number[];
  values: Float32Array;
}

export function checkpointBlobs(
  model: TransformerConfig,
  tokenizer: Tokenizer,
  tokenizerFiles: TokenizerFiles | null,
  weights: readonly ParameterValues[],
  moments: { first: readonly Float32Array[]; second: readonly Float32Array[] },
): PolicyCheckpoint['blobs'] {
  const tensor = (p: ParameterValues, prefix = '') => ({
    name: `${prefix}${gpt2TensorName(p.name)}`,
    shape: p.shape,
    values: p.values,
  });
  return {
    'config.json': json(gpt2ConfigJson(model, tokenizer)),
    'generation_config.json': json(gpt2GenerationConfigJson(tokenizer)),
    ...(tokenizerFiles && {
      'tokenizer.json': json(tokenizerFiles.tokenizerJson),
      'tokenizer_config.json': json(tokenizerFiles.tokenizerConfig),
    }),
    [MODEL_FILE]: encodeSafetensors(
      weights.map((p) => tensor(p)),
      { format: 'pt' },
    ),
    [OPTIMIZER_FILE]: encodeSafetensors(
      [
        ...weights.map((p, i) => tensor({ ...p, values: moments.first[i]! }, 'exp_avg.')),
        ...weights.map((p, i) => tensor({ ...p, values: moments.second[i]! }, 'exp_avg_sq.')),
      ],
      { format: 'searcher-rl.adamw' },
    ),
  };
}

type What = 'weights' | 'moments' | 'second moments';

/** ` (in FILE)` where the checkpoint was read from a file. */
const inFile = (checkpoint: PolicyCheckpoint, blob: string) => {
  const file = checkpoint.source?.blobs[blob];
  return file ? ` (in ${file})` : '';
};

function refuseValues(values: Float32Array, what: What): { index: number; text: string } | null {
  const bad = firstNonFinite(values);
  if (bad) return { index: bad.index, text: `holds ${bad.value}` };
  if (what === 'second moments') {
    const negative = values.findIndex((v) => v < 0);
    if (negative >= 0)
      return { index: negative, text: `holds a negative second moment (${values[negative]})` };
  }
  return null;
}

const mustBe = (what: What) =>
  `a checkpoint's ${what} must be finite${what === 'second moments' ? ' and non-negative' : ''}; load an earlier checkpoint`;

/**
 * The parameters' values from a v2 checkpoint's safetensors blob (`prefix` picks the moments in
 * the optimizer file), every one checked before any is returned: present, of its shape, finite.
 */
export function readTensors(
  checkpoint: PolicyCheckpoint,
  blob: string,
  parameters: ReadonlyArray<{ name: string; shape: readonly number[] }>,
  what: What,
  prefix = '',
): Float32Array[] {
  const argument = `checkpoint.blobs['${blob}']`;
  const file = inFile(checkpoint, blob);
  const bytes = checkpoint.blobs[blob];
  if (!bytes) throw new InvalidArgumentError({ argument, message: `is missing${file}` });
  const { tensors } = decodeSafetensors(bytes, {
    argument,
    ...(checkpoint.source?.blobs[blob] && { source: checkpoint.source.blobs[blob] }),
  });
  return parameters.map((p) => {
    const name = `${prefix}${gpt2TensorName(p.name)}`;
    const tensor = tensors.get(name);
    if (!tensor) throw new InvalidArgumentError({ argument, message: `has no tensor '${name}'${file}` });
    if (tensor.shape.join(',') !== p.shape.join(','))
      throw new InvalidArgumentError({
        argument,
        message: `tensor '${name}' has shape [${tensor.shape.join(', ')}], parameter '${p.name}' [${p.shape.join(', ')}]${file}`,
      });
    const values = float32Of(tensor);
    if (!values)
      throw new InvalidArgumentError({
        argument,
        message: `tensor '${name}' is ${tensor.dtype}, not floating point${file}`,
      });
    const problem = refuseValues(values, what);
    if (problem)
      throw new InvalidArgumentError({
        argument,
        message: `${problem.text} at parameter '${p.name}', element ${problem.index} (tensor '${name}')${file}: ${mustBe(what)}`,
      });
    return values;
  });
}

/** Format v1: the parameters end to end in one little-endian float32 blob, split back per parameter. */
export function readPackedV1(
  checkpoint: PolicyCheckpoint,
  blob: string,
  parameters: ReadonlyArray<{ name: string; shape: readonly number[] }>,
  what: What,
): Float32Array[] {
  const sizes = parameters.map((p) => ({ name: p.name, size: p.shape.reduce((a, b) => a * b, 1) }));
  const total = sizes.reduce((n, p) => n + p.size, 0);
  const bytes = checkpoint.blobs[blob];
  const argument = `checkpoint.blobs['${blob}']`;
  const file = inFile(checkpoint, blob);
  if (!bytes || bytes.byteLength !== total * 4)
    throw new InvalidArgumentError({
      argument,
      message: `expected ${total * 4} bytes, got ${bytes?.byteLength ?? 'none'}${file}`,
    });
  const values = float32Values(bytes);
  const problem = refuseValues(values, what);
  if (problem) {
    const at = parameterAt(sizes, problem.index)!;
    throw new InvalidArgumentError({
      argument,
      message: `${problem.text} at parameter '${at.name}', element ${at.element}${file}: ${mustBe(what)}`,
    });
  }
  let offset = 0;
  return sizes.map((p) => {
    const part = values.subarray(offset, offset + p.size);
    offset += p.size;
    return part;
  });
}
