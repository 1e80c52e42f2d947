// Whether the crop can be learned, on the demo's environment (key.path=value arguments set the run's
// fields, e.g. seed=2): (1) the oracle without its mistakes, over the run's ports: its right-region
// crops and how many of them the reader solved; (2) the warm start's demonstrations: how many are
// small print and crop; (3) SFT epoch by epoch (BENCH_CROPS_EPOCHS, default 6): the teacher-forced
// log-prob of the crop's tokens (the region's name, or its location tokens with
// sft.cropBy=location) on held-out crop demonstrations (every fifth, not trained on) and the share
// of held-out crops with every token above p 0.5. One JSON line per figure.
import { figurePrinter } from './figures';
import { join } from 'node:path';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import { resolvePorts } from '../src/container';
import { createRandom, RANDOM_STREAMS } from '../src/core/random';
import { runSft, type SftExample, sftExamples } from '../src/core/rl/policy-update';
import { createOracleScript } from '../src/env/slides/oracle';
import { buildSlideEnvironment } from '../src/env/slides/build';
import { createSearcher } from '../src/searcher';
import { loadRunConfig } from '../src/run/config';
import { cropOutcome, factPlace } from '../src/run/crop-outcome';
import { summarise } from '../src/run/evaluate';
import { openRun } from '../src/run/session';

const epochs = Number(process.env.BENCH_CROPS_EPOCHS ?? 6);
const print = figurePrinter('crops');
const config = await loadRunConfig(null, {
  overrides: [
    ...process.argv.slice(2),
    `runsDir=${join('.cache', 'bench-crops')}`,
    `runId=crops-${Date.now()}`,
  ],
});
const session = await openRun(config, { kind: 'fresh' });
try {
  const ports = await resolvePorts(session.container);
  const { cacheDir, ...corpusSettings } = config.corpus!;
  const { corpus } = await buildSlideEnvironment(cacheDir, corpusSettings);

  // (1) The oracle, no mistakes, on the evaluated split.
  const oracle = createScriptedPolicy({
    tokenizer: ports.policy.tokenizer,
    script: createOracleScript(corpus, { maxTurns: config.searcher.episode.maxTurns, seed: config.seed }),
  });
  const { adapters: _, ...searcherConfig } = config.searcher;
  const searcher = createSearcher(
    { ...ports, policy: oracle },
    { ...searcherConfig, reward: { ...searcherConfig.reward, weights: 'default' } },
  );
  const questions = session.env.evaluation(config.evaluation.split).prompts;
  const episodes = (await searcher.collect(questions, { nAgent: 1, step: 0 })).episodes.map(
    (e) => e.trajectory,
  );
  const summary = summarise(config.evaluation.split ?? 'test', questions, episodes);
  const byUid = new Map(questions.map((q) => [q.uid, q]));
  let right = 0;
  let rightSolved = 0;
  for (const t of episodes) {
    const question = byUid.get(t.promptUid)!;
    if (cropOutcome(t, factPlace(question)) !== 'right') continue;
    right++;
    if ((t.rewardDetail?.components.judgeScore ?? 0) >= 0.5) rightSolved++;
  }
  const seed = config.seed;
  print('oracle_small_print_solved', summary.smallPrintSuccess, { seed });
  print('oracle_right_region_rate', summary.rightRegionRate ?? null, { seed });
  print('oracle_right_crops_solved', right === 0 ? null : rightSolved / right, { seed, rightCrops: right });

  // (2) The warm start's demonstrations.
  const demonstrations = await session.env.demonstrations!(
    config.sft!.demonstrations,
    ports.policy,
    ports,
    config.searcher.episode,
  );
  const small = new Set(
    session.env.train.filter((q) => (q.metadata as { small?: boolean }).small).map((q) => q.uid),
  );
  const smallDemos = demonstrations.filter((t) => small.has(t.promptUid));
  print('demonstrations_small_print', smallDemos.length, { seed, of: demonstrations.length });
  print('demonstrations_cropped', smallDemos.filter((t) => t.turns.some((turn) => turn.crop)).length, {
    seed,
  });

  // (3) SFT, epoch by epoch: the held-out crops' tokens (what the crop turn writes between <bbox>
  // and </bbox>, inclusive: the region's name, or its location tokens with sft.cropBy=location).
  const tokenizer = session.policy.tokenizer;
  const open = tokenizer.specialTokenId('<bbox>');
  const close = tokenizer.specialTokenId('</bbox>');
  const cropTokens = (e: SftExample) => {
    const start = e.positions.find((p) => e.inputIds[p] === open);
    if (start === undefined) return [];
    const end = e.positions.find((p) => p > start && e.inputIds[p] === close) ?? start;
    return e.positions.filter((p) => p > start && p <= end);
  };
  const examples = sftExamples(demonstrations);
  const cropping = examples.flatMap((e, i) => (cropTokens(e).length > 0 ? [i] : []));
  const heldOut = new Set(cropping.filter((_, k) => k % 5 === 0));
  const train = examples.filter((_, i) => !heldOut.has(i));
  const held = [...heldOut].map((i) => examples[i]!);
  const random = createRandom(config.seed, RANDOM_STREAMS.sftOrder);
  for (let epoch = 1; epoch <= epochs; epoch++) {
    const result = await runSft(
      session.policy,
      train,
      { epochs: 1, batchSize: config.sft!.batchSize },
      { random },
    );
    const logProbs = await session.policy.logProbs({
      inputIds: held.map((e) => e.inputIds),
      positions: held.map(cropTokens),
    });
    const flat = logProbs.flat();
    print(
      'sft_held_out_crop_token_logprob',
      flat.length === 0 ? null : flat.reduce((a, b) => a + b, 0) / flat.length,
      {
        seed,
        epoch,
        cropBy: config.sft!.cropBy,
        loss: Number(result.epochLoss[0]!.toFixed(4)),
        heldOutCrops: held.length,
      },
    );
    print(
      'sft_held_out_crops_written',
      held.length === 0
        ? null
        : logProbs.filter((row) => row.every((v) => v > Math.log(0.5))).length / held.length,
      { seed, epoch, cropBy: config.sft!.cropBy },
    );
  }
} finally {
  await session.close();
}
