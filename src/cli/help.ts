import { runConfigSchema } from '../index';
import { describeConfigFields } from './config-help';

export const USAGE = `searcher-rl <command> [options]

Commands:
  demo                      the main job on the offline slide environment with the default
                            settings (no API keys): SFT warm start, RL, test-split judge success
                            before and after RL, a run folder under runs/ with report.html
  train [-c FILE] [key=value ...]
                            the offline slide environment with your settings, or your own
                            questions and pages when FILE has a \`dataset\` (FILE: YAML or JSON;
                            key.path=value settings apply after it, e.g. searcher.rl.nAgent=4)
  eval -r DIR               evaluate a run's latest checkpoint on a split
  report -r DIR             (re)write a run folder's report.html
  ablate [-c FILE] [key=value ...]
                            the RL ablations from one warm start, a table of test-split success
                            before and after RL per row (npm run bench:learning)
  curate <command>          data-centric RL over a run folder: buckets, verify, rounds, distill,
                            funnel, import, loop (searcher-rl curate --help)
  serve-env [options]       serve the environment and its rewards to distributed trainers
                            (OpenEnv WebSocket protocol; searcher-rl serve-env --help)
  icd <command>             in-context demonstration selection: normalise, eval, mine, inject,
                            control, train (searcher-rl icd --help)
  help [command]            this text, or a command's options (the same as <command> --help)

Options: -V, --version   print the version
         -h, --help      this text
Short flags of the commands: -c (--config), -r (--run), -h (--help).

Exit status: 0 done; 1 failed while running; 2 usage error (an option, argument or the
configuration is wrong, found before anything was written); 130 stopped by Ctrl-C (what was
done is kept).
`;

export const HELP: Record<string, () => string> = {
  demo: () => `searcher-rl demo [key.path=value ...] | demo --scripted [--out DIR]

  The main job on the offline slide environment with the default settings and the fast training
  engine (\`train policy.training=onnx\`, needs onnxruntime-node; policy.training=tfjs trains with
  TensorFlow.js). key.path=value arguments set fields as for train. With --scripted: a scripted Searcher over the mock adapters instead, printing the
  rewards and advantages of one batch (3 questions x 4 rollouts) and writing them under DIR
  (default: runs).
`,
  train: () => `searcher-rl train [-c|--config FILE] [key.path=value ...]

  Builds (or reuses) the offline slide corpus, warm-starts the policy with SFT on the
  demonstrator's successful episodes (rejection sampling; sft.demonstrator=oracle: the slide
  oracle's), evaluates before RL beside the baselines (naive RAG, the crop rules, the oracle as a
  reference), runs the RL phases, evaluates after RL, states the gain over the strongest baseline,
  and writes a run folder with report.html. Running it again on the same runId continues the run.

  With a \`dataset\`, FILE is a run on your own questions and pages (examples/own-data/): no
  corpus; the warm start is SFT on the demonstrator's successful episodes (it searches each
  training question with its own words and keeps those that found a golden page and were judged
  right; \`sft\`), or policy.initFrom. The ports \`searcher.adapters\` leaves unset are the
  Searcher's defaults (the types each port takes, from the adapter registry, are listed below
  under searcher.adapters; sqlite-fts indexes pagesDir or corpusPath). Without one, the unset ports
  are the slide environment's. Settings the run would ignore
  are refused, by name. Paths FILE names for the run to read are relative to FILE.

  The run is checked before anything is written: the config, the questions, that the longest
  prompt (instructions and question, in the policy's tokens) and one turn fit the policy's
  context, and on your own data that the index holds pages and every golden page
  (dataset.allowMissingGolden to train anyway); a refusal names the fields to change. A phase whose
  first steps make no valid action or only zero rewards is flagged with the likely cause.

  key.path=value arguments set fields after FILE (Hydra-style), values read as YAML: e.g.
  searcher.rl.nAgent=4 searcher.episode.instructions= 'phases=[{name: p1, steps: 5, weights: phase1}]'.
  An unknown field is refused by name.

  FILE is YAML (.yaml, .yml) or JSON (.json); every field is optional. Fields and defaults (a
  slide run's; without a \`searcher\` section, a run on your own data uses observationMaxChars 60,
  temperature 0.5, nAgent 4 and, for its own policy, one line of instructions):
${describeConfigFields(runConfigSchema.out).join('\n')}
`,
  eval: () => `searcher-rl eval -r|--run DIR [--split test|validation|train] [--limit N]

  Evaluates the latest checkpoint of the run folder DIR (one rollout per question at the run's
  evaluation temperature) and writes DIR/eval-<split>.json. On a run of your own data, --split
  takes the rows its split column marks (validation: dataset.evalPath where set); without it, the
  run's evaluation questions (DIR/eval-dataset.json).
`,
  'serve-env':
    () => `searcher-rl serve-env [-c|--config FILE] [--tasks FILE] [--split S] [--host H] [--port N]
                     [--workers N] [--max-sessions N] [--max-sessions-per-client N]
                     [--idle-timeout-ms N] [--token T] [--drain-ms N]

  An OpenEnv environment server (docs/scale-out.md): a WebSocket session per episode at /ws
  (reset, step with the raw assistant turn, state, close), the reward at done, and GET /health,
  /metadata, /schema, /tasks. Default: the offline slide environment (FILE's corpus and searcher
  sections as for \`train\`); with --tasks (PromptRecord JSONL) the adapters of FILE's
  searcher.adapters instead.

  --split S            the questions served: train (default), validation or test; with --tasks,
                       the rows its split column marks, as train splits them (no held-out row is
                       served for training)
  --host H             default 127.0.0.1 (0.0.0.0 to serve other machines)
  --port N             default 8000
  --workers N          worker processes behind the one port (node:cluster), default 1
  --max-sessions N     concurrent sessions across all workers (CAPACITY_REACHED beyond), default 64
  --max-sessions-per-client N
                       concurrent sessions of one client (CAPACITY_REACHED for it beyond, others
                       still served), default half of --max-sessions, at least 1; a client is its
                       Basic user name (ws://NAME:T@host) with --token, else its address
  --idle-timeout-ms N  end a session silent this long, default 600000 (0: never)
  --token T            require the token T (or SEARCHER_RL_TOKEN): Authorization: Bearer T, or Basic
                       credentials with T as password (ws://user:T@host:port for OpenEnv's clients)
  --drain-ms N         on SIGTERM, how long running episodes may take to finish, default 30000
`,
  ablate: () => `searcher-rl ablate [-c|--config FILE] [--only NAME,NAME] [--seeds N,N] [key.path=value ...]

  Trains the run of FILE (default: the demo's settings) once as the baseline, then each ablation's
  RL phases from the baseline's SFT checkpoint with the same seed, and prints a table of judge
  success on the test split before and after RL: baseline, ppo-clip, no-state-masking, judge-only,
  n-agent-4. Each row is a run folder under <runsDir>/<runId>/ (ablations.json, ablations.md).
  Rerunning continues the folders. key.path=value arguments set fields after FILE (as for train).

  --only NAME,NAME     run only these ablations (the baseline always runs first)
  --seeds N,N          the baseline and ablations on the first seed, then the baseline on each
                       other one (seed, sampling and corpus; <runId>/seed-N); prints one JSON line
                       per figure and seed (judge success, right-region crops, ... before and
                       after RL, seconds) and writes seeds.json (npm run bench:learning: 1,2,3)
`,
  report: () => `searcher-rl report -r|--run DIR

  (Re)writes DIR/report.html from a run folder: curves, difficulty buckets, an episode browser.
`,
};
