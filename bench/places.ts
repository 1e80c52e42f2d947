// Does the small Searcher copy a box from the page (docs/method.md#why-the-crop-was-not-learned)?
// The slide demo with its crops written as location tokens (sft.cropBy=location: the warm start
// writes the page's whole mark, `<bbox>footnote at <x1_17><y1_20><x2_23><y2_25></bbox>`, and the
// episode crops the box), on two corpora:
//   unseen-places  corpus.heldOutPlaces=true: the small print of the validation and test decks sits
//                  where no training deck's does (location bins no training crop starts at), so a
//                  right box is a copy from the page, never a remembered place
//   seen-places    the same corpus without it (the control: held-out pages, the places of training)
// Seeds 1-3, each its own corpus as the demo's seeds are (BENCH_PLACES_SEEDS, BENCH_PLACES_VARIANTS choose). One JSON line per run, then one
// per variant with the mean and the spread (min, max) over seeds of: judge success on the test
// split for naive RAG, RAG with the keyword crop rule (it crops the region the page's pointer line
// names: the box read off the page), the warm start and RL; and on the small-print questions,
// success, the share cropped and the right region (a crop that covers the asked fact's line: by
// coordinates). Each run stays in .cache/bench-places/VARIANT-sSEED.
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { mean } from '../src/core/stats';
import { seedsAndVariants } from './figures';

const VARIANTS: Record<string, string[]> = {
  'unseen-places': ['corpus.heldOutPlaces=true'],
  'seen-places': [],
};

const { seeds, variants } = seedsAndVariants('BENCH_PLACES', Object.keys(VARIANTS));

const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const run = promisify(execFile);
const runsDir = join(root, '.cache', 'bench-places');

interface Summary {
  judgeSuccess: number;
  smallPrintSuccess: number | null;
  smallPrintCropRate: number | null;
  rightRegionRate: number | null;
}

const round = (x: number | null) => (x === null ? null : Number(x.toFixed(4)));
const results: Record<string, Array<Record<string, number | null>>> = {};
for (const variant of variants) {
  for (const seed of seeds) {
    const runId = `${variant}-s${seed}`;
    await rm(join(runsDir, runId), { recursive: true, force: true });
    const started = performance.now();
    await run(
      tsx,
      [
        join(root, 'src/cli/main.ts'),
        'demo',
        `runsDir=${runsDir}`,
        `runId=${runId}`,
        `seed=${seed}`,
        `corpus.seed=${seed}`,
        'sft.cropBy=location',
        ...VARIANTS[variant]!,
      ],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    const seconds = (performance.now() - started) / 1000;
    const summary = JSON.parse(await readFile(join(runsDir, runId, 'summary.json'), 'utf8')) as {
      before: Summary;
      after: Summary;
      baselines: Array<{ name: string; summary: Summary }>;
    };
    const baseline = (name: string) => {
      const found = summary.baselines.find((b) => b.name === name);
      if (!found) throw new Error(`${runsDir}/${runId}/summary.json has no '${name}' baseline`);
      return found.summary;
    };
    const keyword = baseline('RAG + keyword rule');
    const figures = {
      naiveRag: round(baseline('naive RAG').judgeSuccess),
      ragKeywordRule: round(keyword.judgeSuccess),
      warmStart: round(summary.before.judgeSuccess),
      rl: round(summary.after.judgeSuccess),
      ragKeywordRuleSmallPrint: round(keyword.smallPrintSuccess),
      warmStartSmallPrint: round(summary.before.smallPrintSuccess),
      rlSmallPrint: round(summary.after.smallPrintSuccess),
      ragKeywordRuleRightRegion: round(keyword.rightRegionRate),
      warmStartCropped: round(summary.before.smallPrintCropRate),
      warmStartRightRegion: round(summary.before.rightRegionRate),
      rlCropped: round(summary.after.smallPrintCropRate),
      rlRightRegion: round(summary.after.rightRegionRate),
      seconds: Number(seconds.toFixed(1)),
    };
    (results[variant] ??= []).push(figures);
    console.log(JSON.stringify({ bench: 'places', variant, seed, ...figures }));
  }
  const rows = results[variant] ?? [];
  const spread = (key: string) => {
    const values = rows.map((r) => r[key]).filter((v): v is number => typeof v === 'number');
    return values.length === 0
      ? null
      : { mean: round(mean(values)), min: Math.min(...values), max: Math.max(...values) };
  };
  const keys = Object.keys(rows[0] ?? {}).filter((k) => k !== 'seconds');
  console.log(
    JSON.stringify({
      bench: 'places',
      variant,
      seeds,
      ...Object.fromEntries(keys.map((k) => [k, spread(k)])),
    }),
  );
}
