import type { CallOptions } from '../../ports/common';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { Evidence } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { createLlamaPolicy, type LlamaPolicy } from './policy';
import { type LlamaGeneratorSettings, llamaGeneratorSettingsSchema } from './settings';

// A frozen Generator that is a real language model: a Llama-family model (SmolLM2-135M-Instruct
// from `npm run fetch-models`, or any model the Llama engine loads) answers the question from the
// evidence's text in its own chat template, greedily. Crops without text are left out (a text
// model cannot read them; the extractive reader does no better there).

/** The first line of a generated answer, before any special token, without a closing period or wrapping quotes. */
export function answerLine(text: string): string {
  const line = text
    .split(/<\|[^|\s]*\|>|<\/s>/)[0]!
    .trim()
    .split('\n')[0]!
    .trim();
  return line
    .replace(/^["'“]+|["'”]+$/g, '')
    .replace(/\.$/, '')
    .trim();
}

/** The Llama Generator: a Generator that holds a model. */
export interface LlamaGenerator extends Generator {
  /** Releases the model's ONNX Runtime sessions. */
  dispose(): Promise<void>;
}

/** A Generator answering with a local Llama-family model (greedy, in its chat template), offline. */
export async function createLlamaGenerator(settings: LlamaGeneratorSettings): Promise<LlamaGenerator> {
  const parsed = parseSettings('createLlamaGenerator', llamaGeneratorSettingsSchema, settings);
  const policy: LlamaPolicy = await createLlamaPolicy({
    model: parsed.model,
    finetune: 'none',
    ...(parsed.intraOpThreads !== undefined && { intraOpThreads: parsed.intraOpThreads }),
  });
  const { tokenizer } = policy;
  const evidenceText = (evidence: readonly Evidence[]) => {
    let budget = parsed.maxEvidenceTokens;
    const parts: string[] = [];
    for (const [i, e] of evidence.entries()) {
      if (e.text === undefined || e.text.trim() === '' || budget <= 0) continue;
      const ids = tokenizer.encode(e.text);
      const kept = ids.length <= budget ? e.text : tokenizer.decode(ids.slice(0, budget));
      budget -= Math.min(ids.length, budget);
      parts.push(`[${i + 1}] ${kept.trim()}`);
    }
    return parts.length > 0 ? parts.join('\n\n') : '(no evidence)';
  };
  return {
    specificationVersion: 'v1',
    provider: 'llama',
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      options?: CallOptions,
    ): Promise<GeneratorAnswer> {
      options?.signal?.throwIfAborted();
      const text = `${parsed.instructions}\n\nEvidence:\n${evidenceText(evidence)}\n\nQuestion: ${question}`;
      const prompt = tokenizer.encode(
        policy.chatFormat ? policy.chatFormat.prompt(text) : `${text}\nAnswer:`,
      );
      const session = await policy.begin([prompt], options?.signal ? { signal: options.signal } : {});
      try {
        const [turn] = await session.generateTurn([0], {
          stopAfter: ['\n'],
          maxTokens: parsed.maxNewTokens,
          temperature: 0,
          topP: 1,
          ...(options?.signal && { signal: options.signal }),
        });
        const ids = turn!.steps.map((s) => s.tokenId);
        return {
          answer: answerLine(tokenizer.decode(ids)),
          usage: { inputTokens: prompt.length, outputTokens: ids.length },
        };
      } finally {
        await session.end();
      }
    },
    dispose: () => policy.dispose(),
  };
}
