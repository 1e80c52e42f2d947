import type { PolicyBackend, RolloutSession } from '../ports/policy-backend';

/**
 * Wraps a policy's rollout sessions so that a test can intercept `generateTurn`, `append` or
 * `end` (to inject faults or record order); each override gets the real session to delegate to.
 */
export function interceptSessions(
  policy: PolicyBackend,
  overrides: (session: RolloutSession) => Partial<Pick<RolloutSession, 'generateTurn' | 'append' | 'end'>>,
): void {
  const begin = policy.begin.bind(policy);
  policy.begin = async (ids, options) => {
    const session = await begin(ids, options);
    const replaced = overrides(session);
    return {
      size: session.size,
      generateTurn: replaced.generateTurn ?? session.generateTurn.bind(session),
      append: replaced.append ?? session.append.bind(session),
      end: replaced.end ?? session.end.bind(session),
    };
  };
}
