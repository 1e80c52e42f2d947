// The demo's SFT warm start, profiled: where its time goes (collecting the oracle's demonstrations,
// then training) and training tokens/s, on the demo's corpus, policy and demonstrations (a slice of
// them, BENCH_SFT_DEMOS, default 400, one epoch). One JSON line per figure.
import { join } from 'node:path';
import { resolvePorts } from '../src/container';
import { createRandom, RANDOM_STREAMS } from '../src/core/random';
import { runSft, sftExamples } from '../src/core/rl/policy-update';
import { parseRunConfig } from '../src/run/config';
import { openRun } from '../src/run/session';

const demos = Number(process.env.BENCH_SFT_DEMOS ?? 400);
const print = (figure: string, value: number, extra: Record<string, unknown> = {}) =>
  console.log(JSON.stringify({ bench: 'sft', figure, value: Number(value.toPrecision(4)), ...extra }));
const config = parseRunConfig({ runsDir: join('.cache', 'bench-sft'), runId: 'sft' });
const sft = config.sft!;
const session = await openRun(config, { kind: 'fresh' });
try {
  const ports = await resolvePorts(session.container);
  const policy = session.policy as typeof session.policy & { backend: { name: string } };
  let started = performance.now();
  const examples = sftExamples(
    await session.env.demonstrations!(demos, policy, ports, config.searcher.episode),
  );
  const collectSeconds = (performance.now() - started) / 1000;
  const tokens = examples.reduce((n, e) => n + e.inputIds.length, 0);
  const scored = examples.reduce((n, e) => n + e.positions.length, 0);
  started = performance.now();
  const result = await runSft(
    policy,
    examples,
    { epochs: 1, batchSize: sft.batchSize },
    { random: createRandom(config.seed, RANDOM_STREAMS.sftOrder) },
  );
  const trainSeconds = (performance.now() - started) / 1000;
  const common = { demonstrations: examples.length, backend: policy.backend.name, batchSize: sft.batchSize };
  print('sft_collect_seconds_per_1000_demonstrations', (collectSeconds * 1000) / examples.length, {
    ...common,
    note: "the oracle's episodes: search (SQLite FTS5), crops (sharp)",
  });
  print('sft_train_tokens_per_second', tokens / trainSeconds, {
    ...common,
    tokens,
    scoredTokens: scored,
    updates: result.updates,
    note: 'sequence tokens through forward + backward + AdamW per second, one epoch',
  });
  print('sft_train_seconds_per_epoch_of_2000', (trainSeconds * 2000) / examples.length, {
    ...common,
    note: "one epoch of the demo's 2000 demonstrations, extrapolated",
  });
} finally {
  await session.close();
}
