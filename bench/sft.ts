// The demo's SFT warm start, profiled: where its time goes (collecting the demonstrations, then
// training) and training tokens/s, on the demo's corpus, policy and demonstrations (a slice of
// them, BENCH_SFT_DEMOS, default 400, one epoch). The training engine is the demo's
// (`policy.training: onnx`), on one lane and on two (`policy.trainingLanes`: the rows split
// between the main thread and a worker thread), each from the same seed in its own run folder;
// BENCH_SFT_TRAINING=tfjs measures the TensorFlow.js engine instead (lanes do not apply). One JSON
// line per figure, then the two-lane ratio.
import { figurePrinter } from './figures';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { resolvePorts } from '../src/container';
import { createRandom, RANDOM_STREAMS } from '../src/core/random';
import { runSft, sftExamples } from '../src/core/rl/policy-update';
import { parseRunConfig } from '../src/run/config';
import { openRun } from '../src/run/session';

const demos = Number(process.env.BENCH_SFT_DEMOS ?? 400);
const training = process.env.BENCH_SFT_TRAINING === 'tfjs' ? 'tfjs' : 'onnx';
const print = figurePrinter('sft');

/** One epoch of SFT on `demos` demonstrations with `lanes` training lanes: its tokens/s. */
async function measure(lanes: number): Promise<number> {
  const config = parseRunConfig({
    runsDir: join('.cache', 'bench-sft'),
    runId: `sft-${training}-${lanes}`,
    policy: { training, trainingLanes: lanes },
  });
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
    const common = {
      demonstrations: examples.length,
      backend: policy.backend.name,
      training,
      ...(training === 'onnx' && { lanes }),
      batchSize: sft.batchSize,
    };
    if (lanes === 1)
      print('sft_collect_seconds_per_1000_demonstrations', (collectSeconds * 1000) / examples.length, {
        ...common,
        note: "the demonstrator's episodes: search (SQLite FTS5), reader, judge, crops (sharp)",
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
    return tokens / trainSeconds;
  } finally {
    await session.close();
  }
}

const one = await measure(1);
if (training === 'onnx' && cpus().length >= 2) {
  const two = await measure(2);
  print('sft_train_ratio_two_lanes_over_one', two / one, {
    note: 'the same demonstrations and seed, one epoch each, measured one after the other',
  });
}
