// The Searcher section of the tiny runs that the resume tests and the reliability benches train in
// seconds (a 1-layer policy, two short turns, two rollouts a prompt), kept in one place so that
// the test and the bench measure the same run.

/** Two turns of 12 tokens in a 192-token context, observations cut at 30 characters, n_agent 2. */
export const TINY_SEARCHER = Object.freeze({
  episode: {
    instructions: '',
    maxTurns: 2,
    maxTurnTokens: 12,
    maxContextTokens: 192,
    observationMaxChars: 30,
    temperature: 1,
  },
  rl: { nAgent: 2 },
});
