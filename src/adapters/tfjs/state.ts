import { InvalidArgumentError } from '../../core/errors';
import type { Tokenizer } from '../../ports/types';
import type { AdamW } from './adamw';
import type { TokenizerFiles } from './hf/checkpoint-files';
import { activateTfjsBackend } from './backends';
import type { ParsedTfjsPolicySettings } from './settings';
import type { Transformer, TransformerConfig } from '../engines/transformer/transformer';

/**
 * Everything about a TfjsPolicy that changes after creation, in one object handed to every part:
 * `load` and `resetOptimizer` replace the optimizer, `begin` advances the session counter, `load`
 * restores it and the sampling seed. The model object itself is never replaced (`load` assigns
 * into its variables), so parts may hold on to it; they must read the optimizer from here each time.
 */
export interface PolicyState {
  readonly model: Transformer;
  optimizer: AdamW;
  /** Sessions begun so far; a session's sampling streams are keyed by its index, so it is checkpointed. */
  sessionCounter: number;
  samplingSeed: number;
  disposed: boolean;
}

/** What the parts share: the facts fixed at creation, and the state. */
export interface PolicyContext {
  readonly settings: ParsedTfjsPolicySettings;
  readonly tokenizer: Tokenizer;
  /** The tokenizer files of the folder the policy was made from (`initFrom`), written with its checkpoints. */
  readonly tokenizerFiles?: TokenizerFiles;
  readonly modelConfig: TransformerConfig;
  /** tfjs's own name for the backend chosen at creation. */
  readonly backendTfName: string;
  readonly state: PolicyState;
}

/** tfjs has one active backend per process, and another policy may have switched it since. */
export function activateBackend(context: PolicyContext): Promise<void> {
  return activateTfjsBackend(context.backendTfName);
}

export async function ensureReady(context: PolicyContext): Promise<void> {
  if (context.state.disposed)
    throw new InvalidArgumentError({ argument: 'policy', message: 'this TfjsPolicy was disposed' });
  await activateBackend(context);
}
