import { PortOutputError } from '../errors';
import type { TokenStep } from '../../ports/types';

/**
 * Accumulates one rollout's token sequence. Policy tokens get mask 1; prompt, observation,
 * forced and answer tokens mask 0 (state masking). Positions are checked as they arrive, so a
 * backend that loses track of the sequence fails loudly instead of training on shifted tokens.
 */
export class TrajectoryTokens {
  readonly fullInputIds: number[] = [];
  readonly lossMask: number[] = [];
  readonly generatedPositions: number[] = [];
  readonly promptLength: number;
  private generated = '';
  private readonly steps: TokenStep[] = [];
  /** Turns recorded by their ids only (appendExternalPolicy), made into TokenSteps when read. */
  private pending: Array<{ start: number; count: number; tokenText: (id: number) => string }> = [];

  constructor(
    promptIds: readonly number[],
    private readonly provider: string,
  ) {
    this.promptLength = promptIds.length;
    for (const id of promptIds) {
      this.fullInputIds.push(id);
      this.lossMask.push(0);
    }
  }

  get length(): number {
    return this.fullInputIds.length;
  }

  get generatedText(): string {
    return this.generated;
  }

  /** The policy's tokens, in position order. */
  get tokenSteps(): TokenStep[] {
    for (const { start, count, tokenText } of this.pending)
      for (let position = start; position < start + count; position++) {
        const tokenId = this.fullInputIds[position]!;
        this.steps.push({ tokenId, tokenText: tokenText(tokenId), logProb: 0, position });
      }
    this.pending = [];
    return this.steps;
  }

  appendPolicy(steps: readonly TokenStep[], text: string): void {
    if (this.pending.length > 0) void this.tokenSteps;
    steps.forEach((step, k) => {
      if (step.position !== this.fullInputIds.length) {
        throw new PortOutputError({
          port: 'policy',
          provider: this.provider,
          field: `steps[${k}].position`,
          message: `expected position ${this.fullInputIds.length}, got ${step.position}`,
        });
      }
      if (!Number.isInteger(step.tokenId) || step.tokenId < 0) {
        throw new PortOutputError({
          port: 'policy',
          provider: this.provider,
          field: `steps[${k}].tokenId`,
          message: `not a token id: ${step.tokenId}`,
        });
      }
      if (typeof step.tokenText !== 'string') {
        throw new PortOutputError({
          port: 'policy',
          provider: this.provider,
          field: `steps[${k}].tokenText`,
          message: `expected a string, got ${typeof step.tokenText}`,
        });
      }
      if (typeof step.logProb !== 'number' || Number.isNaN(step.logProb) || step.logProb > 1e-6) {
        throw new PortOutputError({
          port: 'policy',
          provider: this.provider,
          field: `steps[${k}].logProb`,
          message: `not a log-probability: ${step.logProb}`,
        });
      }
      this.fullInputIds.push(step.tokenId);
      this.lossMask.push(1);
      this.steps.push(step);
      this.generatedPositions.push(step.position);
    });
    this.generated += text;
  }

  /**
   * A policy turn generated outside (a trainer stepping an environment server), recorded by its
   * token ids: the log-probs are the trainer's (0 here), and no object is made per token until
   * `tokenSteps` is read, so a turn costs its ids, not an object per byte.
   */
  appendExternalPolicy(ids: readonly number[], text: string, tokenText: (id: number) => string): void {
    const start = this.fullInputIds.length;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!;
      if (!Number.isInteger(id) || id < 0)
        throw new PortOutputError({
          port: 'policy',
          provider: this.provider,
          field: `ids[${k}]`,
          message: `not a token id: ${id}`,
        });
      this.fullInputIds.push(id);
      this.lossMask.push(1);
      this.generatedPositions.push(start + k);
    }
    if (ids.length > 0) this.pending.push({ start, count: ids.length, tokenText });
    this.generated += text;
  }

  /** Tokens the policy did not sample (observations, forced completions, the generator's answer). */
  appendContext(ids: readonly number[], text: string): void {
    for (const id of ids) {
      this.fullInputIds.push(id);
      this.lossMask.push(0);
    }
    this.generated += text;
  }
}
