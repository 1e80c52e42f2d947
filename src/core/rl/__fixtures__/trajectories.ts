import type { Trajectory } from '../../trajectory/trajectory';

/**
 * A trajectory of prompt (mask 0), policy tokens (mask 1) at `policy`, observations (mask 0) and
 * a trailing forced or answer block (mask 0) after the last policy token.
 */
export function trajectoryWith(sampleId: string, length: number, policy: number[], advantage: number | null, logProb = (p: number) => -0.1 * p): Trajectory {
  const fullInputIds = Array.from({ length }, (_, p) => 100 + p);
  const lossMask = fullInputIds.map((_, p) => (policy.includes(p) ? 1 : 0));
  const tokenSteps = policy.map((position) => ({ tokenId: 100 + position, tokenText: `t${position}`, logProb: logProb(position), position }));
  return { sampleId, fullInputIds, lossMask, tokenSteps, advantage } as unknown as Trajectory;
}
