import { z } from 'zod';

/** The log-prob of every token of a script: a scripted policy is certain of it. */
export const SCRIPTED_LOG_PROB = 0;

/** The parts of a scripted policy a configuration file can hold: the turns, and the log-prob of every token. */
export const scriptedPolicyConfigSchema = z
  .object({
    /** Turns for every rollout, or per rollout (cycling). */
    script: z.union([z.array(z.string()).min(1), z.array(z.array(z.string()).min(1)).min(1)]),
    logProb: z.number().max(0).default(SCRIPTED_LOG_PROB),
  })
  .strict();
