import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../core/errors';
import { decodeSafetensors, float32Of } from '../../provider-utils/safetensors';
import { llamaCppLoraGguf } from './llama-cpp-lora';
import { createLlamaCppRollouts, type LlamaCppGpu, type LlamaCppRollouts } from './llama-cpp-rollouts';
import type { PolicyBackend, PolicyCheckpoint } from '../../ports/policy-backend';

/** What the wrapper needs of the Llama policy (written out: policy.ts imports this file). */
export interface LlamaCppWrappablePolicy extends PolicyBackend {
  readonly finetune: 'lora' | 'full' | 'none';
  readonly contextLength: number;
  readonly modelConfig: { modelType: string; heads: number; kvHeads: number; eosTokenIds: readonly number[] };
  dispose(): Promise<void>;
}

/** How `rollouts: 'llama-cpp'` runs (the Llama policy's `llamaCpp` settings). */
export interface LlamaCppPolicySettings {
  /** The policy's .gguf file: llama.cpp runs its weights as stored (quantised ones stay quantised). */
  model: string;
  seed: number;
  sequencesPerContext: number;
  threads?: number;
  gpu: LlamaCppGpu;
}

/** A LoRA policy checkpoint's adapter (peft's files) as llama.cpp's GGUF adapter. */
export function llamaCppAdapterOf(
  checkpoint: PolicyCheckpoint,
  config: LlamaCppWrappablePolicy['modelConfig'],
): Uint8Array {
  const safetensors = checkpoint.blobs['adapter_model.safetensors'];
  const adapterConfig = checkpoint.blobs['adapter_config.json'];
  if (!safetensors || !adapterConfig)
    throw new InvalidArgumentError({
      argument: 'checkpoint.blobs',
      message: 'a LoRA checkpoint holds adapter_model.safetensors and adapter_config.json',
    });
  const alpha = Number(
    (JSON.parse(new TextDecoder().decode(adapterConfig)) as { lora_alpha?: unknown }).lora_alpha,
  );
  const weights = new Map<string, { values: Float32Array; rows: number }>();
  for (const [name, tensor] of decodeSafetensors(safetensors, { argument: 'adapter_model.safetensors' })
    .tensors) {
    const values = float32Of(tensor);
    if (values) weights.set(name.replace(/^base_model\.model\./, ''), { values, rows: tensor.shape[0]! });
  }
  return llamaCppLoraGguf({
    architecture: config.modelType === 'mistral' ? 'llama' : config.modelType,
    heads: config.heads,
    kvHeads: config.kvHeads,
    alpha,
    weights,
  });
}

/**
 * The Llama policy with its rollouts sampled by llama.cpp (node-llama-cpp) on the GGUF file, while
 * `logProbs` and `update` stay the training engine's: the trainer recomputes every log-prob it
 * trains on, as verl does behind vLLM. With LoRA the adapter goes to llama.cpp as a GGUF adapter
 * before the first rollout after each `update` or `load` (sessions already open keep the weights
 * they began with). Full fine-tuning is refused: every update would change the GGUF's weights.
 */
export async function withLlamaCppRollouts<Policy extends LlamaCppWrappablePolicy>(
  policy: Policy,
  settings: LlamaCppPolicySettings,
): Promise<Policy> {
  const refuse = async (message: string) => {
    // The training engine is loaded already: a refusal frees it.
    await policy.dispose();
    throw new InvalidArgumentError({ argument: 'rollouts', message });
  };
  if (policy.finetune === 'full')
    await refuse(
      "'llama-cpp' rollouts run the GGUF file's weights, which full fine-tuning changes at every update; use finetune 'lora' (the adapter is handed to llama.cpp) or 'none', or rollouts 'onnx'",
    );
  if (!settings.model.endsWith('.gguf'))
    await refuse(
      `'llama-cpp' rollouts read a .gguf file; '${settings.model}' is not one (use rollouts 'onnx' for a Hugging Face folder)`,
    );
  const config = policy.modelConfig;
  let rollouts: LlamaCppRollouts;
  try {
    rollouts = await createLlamaCppRollouts({
      model: settings.model,
      tokenizer: policy.tokenizer,
      contextLength: policy.contextLength,
      sequencesPerContext: settings.sequencesPerContext,
      ...(settings.threads !== undefined && { threads: settings.threads }),
      gpu: settings.gpu,
      seed: settings.seed,
      extraEosTokenIds: config.eosTokenIds.slice(1),
      rescore: (batch) => policy.logProbs(batch),
    });
  } catch (error) {
    await policy.dispose();
    throw error;
  }
  const folder =
    policy.finetune === 'lora' ? await mkdtemp(join(tmpdir(), 'searcher-rl-llama-cpp-lora-')) : null;
  const state = { adapterStale: folder !== null, adapterVersion: 0 };

  /** The policy's current adapter as a GGUF file llama.cpp loads for the rollouts begun next. */
  const handOverAdapter = async () => {
    const bytes = llamaCppAdapterOf(await policy.save(), config);
    const path = join(folder!, `adapter-${++state.adapterVersion}.gguf`);
    await writeFile(path, bytes);
    await rollouts.setLoraAdapter({ path });
    // The file is read when a context is made for the next rollouts; the one before is no longer needed.
    if (state.adapterVersion > 1)
      await rm(join(folder!, `adapter-${state.adapterVersion - 1}.gguf`), { force: true });
  };

  return {
    ...policy,
    async begin(promptTokenIds, callOptions) {
      await policy.doCheck?.();
      if (state.adapterStale) {
        await handOverAdapter();
        state.adapterStale = false;
      }
      return rollouts.begin(promptTokenIds, callOptions);
    },
    async update(batch, lossFn, options) {
      const result = await policy.update(batch, lossFn, options);
      if (result.applied && folder) state.adapterStale = true;
      return result;
    },
    async load(checkpoint) {
      await policy.load(checkpoint);
      if (folder) state.adapterStale = true;
    },
    async dispose() {
      await rollouts.dispose();
      if (folder) await rm(folder, { recursive: true, force: true });
      await policy.dispose();
    },
  };
}
