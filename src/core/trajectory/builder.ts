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
  readonly tokenSteps: TokenStep[] = [];
  readonly generatedPositions: number[] = [];
  readonly promptLength: number;
  private generated = '';

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

  appendPolicy(steps: readonly TokenStep[], text: string): void {
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
      this.tokenSteps.push(step);
      this.generatedPositions.push(step.position);
    });
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
