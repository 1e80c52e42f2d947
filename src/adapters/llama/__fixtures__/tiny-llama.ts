import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRandom } from '../../../core/random';
import { encodeSafetensors } from '../../../provider-utils/safetensors';
import { llamaWeightShapes, parseLlamaConfig } from '../../engines/llama/config';

// A tiny random Llama in a Hugging Face folder (the tiny GPT fixture's byte-level tokenizer, a
// ChatML template), for the policy's and the generator's tests.

const FIXTURE = join(import.meta.dirname, '../../onnx/__fixtures__/tiny-gpt');
/** A ChatML chat template. */
export const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** The tiny model's config.json. */
export const configJson = {
  model_type: 'llama',
  vocab_size: 397,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  max_position_embeddings: 512,
  tie_word_embeddings: true,
  bos_token_id: 384,
  eos_token_id: 384,
};

/** Writes a tiny random Llama (2 layers, width 32) as a Hugging Face folder into `dir`. */
export async function writeTinyLlama(dir: string): Promise<void> {
  const config = parseLlamaConfig(configJson, 'tiny');
  const random = createRandom(3, 1);
  const tensors = llamaWeightShapes(config).map(({ name, shape }) => {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < values.length; i++)
      values[i] = name.includes('norm') ? 1 : (random.nextFloat() - 0.5) * 0.4;
    return { name, shape, values };
  });
  await writeFile(join(dir, 'model.safetensors'), encodeSafetensors(tensors, { format: 'pt' }));
  await writeFile(join(dir, 'config.json'), JSON.stringify(configJson));
  await writeFile(join(dir, 'tokenizer.json'), await readFile(join(FIXTURE, 'tokenizer.json')));
  const tokenizerConfig = JSON.parse(await readFile(join(FIXTURE, 'tokenizer_config.json'), 'utf8'));
  await writeFile(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ ...tokenizerConfig, chat_template: CHATML }),
  );
}
