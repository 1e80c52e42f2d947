import type { PolicyBackend, TurnOutput } from '../ports/policy-backend';
import type { TokenStep } from '../ports/types';

/**
 * What `rollTwoTurns` returns: both turns of each rollout and each full sequence, to compare with
 * `logProbs`.
 */
export interface TwoTurnRollout {
  first: TurnOutput[];
  second: TurnOutput[];
  /** Each rollout's full sequence: prompt, turns and the observation between them. */
  sequences: number[][];
  /** Each rollout's generated steps, both turns. */
  steps: TokenStep[][];
}

/**
 * The numeric contract's workload, the same for every policy backend: three rollouts of uneven
 * prompts and budgets, a turn, observations appended to two of them, and a second turn (so that
 * caches of different lengths share forwards).
 */
export async function rollTwoTurns(
  policy: PolicyBackend,
  options: { temperature: number; topP: number; stopAfter?: readonly string[] },
): Promise<TwoTurnRollout> {
  const tok = policy.tokenizer;
  const stopAfter = options.stopAfter ?? ['</search>'];
  const sampling = { temperature: options.temperature, topP: options.topP };
  const prompts = ['Question: apple\n', 'Q: river delta?\n', 'Q: x\n'].map((t) => tok.encode(t));
  const session = await policy.begin(prompts);
  const first = await session.generateTurn([0, 1, 2], { stopAfter, maxTokens: [5, 9, 3], ...sampling });
  const observation = tok.encode('<information>[page a.png] some text</information>');
  const short = tok.encode('<information>x</information>');
  await session.append(1, observation);
  await session.append(2, short);
  const second = await session.generateTurn([1, 2], { stopAfter, maxTokens: 6, ...sampling });
  await session.end();
  const sequences = prompts.map((p) => [...p]);
  const steps = prompts.map(() => [] as TokenStep[]);
  const add = (outputs: TurnOutput[]) =>
    outputs.forEach((o) =>
      o.steps.forEach((s) => (sequences[o.rolloutId]!.push(s.tokenId), steps[o.rolloutId]!.push(s))),
    );
  add(first);
  sequences[1]!.push(...observation);
  sequences[2]!.push(...short);
  add(second);
  return { first, second, sequences, steps };
}

/**
 * The numeric contract of a policy backend: the log-prob of every generated token (decoded
 * incrementally with the key/value cache) against `logProbs` over the full sequence (one forward,
 * no cache) at the same temperature. Returns the largest absolute difference, and whether every
 * step's position holds its token.
 */
export async function incrementalLogProbError(
  policy: PolicyBackend,
  options: { temperature: number; topP: number },
): Promise<{ maxError: number; positionsHold: boolean; rollout: TwoTurnRollout }> {
  const rollout = await rollTwoTurns(policy, options);
  const { sequences, steps } = rollout;
  const positionsHold = steps.every((row, i) => row.every((s) => sequences[i]![s.position] === s.tokenId));
  const full = await policy.logProbs({
    inputIds: sequences,
    positions: steps.map((row) => row.map((s) => s.position)),
    temperature: options.temperature,
  });
  let maxError = 0;
  steps.forEach((row, i) =>
    row.forEach(
      (s, k) => (maxError = Math.max(maxError, Math.abs(s.logProb - (full[i]?.[k] ?? Number.NaN)))),
    ),
  );
  return { maxError: Number.isNaN(maxError) ? Number.POSITIVE_INFINITY : maxError, positionsHold, rollout };
}
