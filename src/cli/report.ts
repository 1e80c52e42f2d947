import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { InvalidArgumentError } from '../core/errors';
import { trajectoryFromJSON } from '../core/trajectory/serialize';
import type { Trajectory } from '../core/trajectory/trajectory';

interface ReportEpisode {
  question: string;
  reference: string | null;
  answer: string;
  terminated: string;
  reward: number | null;
  judge: number | null;
  ndcg: number | null;
  golden: string[];
  turns: Array<{ text: string; observation: string; images: Array<{ label: string; src: string }> }>;
}

async function readJsonl(path: string): Promise<unknown[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as unknown);
}

const escapeHtml = (text: string) => text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);

/** The difficulty buckets (docs/method.md#difficulty-buckets), on NDCG per prompt: B > 0.7, A 0.1-0.7, 0 below 0.1. */
export function difficultyBuckets(trajectories: readonly Trajectory[]): Record<'B' | 'A' | '0', number> {
  const byPrompt = new Map<string, number[]>();
  for (const t of trajectories) byPrompt.set(t.promptUid, [...(byPrompt.get(t.promptUid) ?? []), t.rewardDetail?.components.ndcg ?? 0]);
  const buckets = { B: 0, A: 0, '0': 0 };
  for (const values of byPrompt.values()) {
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    if (mean > 0.7) buckets.B++;
    else if (mean >= 0.1) buckets.A++;
    else buckets['0']++;
  }
  return buckets;
}

/**
 * Writes `report.html` into a run folder: curves of reward, success, NDCG and turns per step, the
 * difficulty distribution of the evaluation, and an episode browser with each turn's text, the
 * retrieved slides and crops as images, and the rewards. One self-contained file (images inline).
 */
export async function writeReport(runDir: string, options: { episodes?: number } = {}): Promise<string> {
  let summary: { runId: string; before: unknown; after: unknown; corpus: { slidesDir: string } };
  try {
    summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as typeof summary;
  } catch (error) {
    throw new InvalidArgumentError('run', `'${runDir}' has no summary.json (is it a finished run folder?)`, { cause: error });
  }
  const config = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as { phases: Array<{ name: string }> };
  const curves: Array<{ phase: string; step: number; reward: number | null; success: number | null; ndcg: number; turns: number }> = [];
  for (const phase of config.phases) {
    // A resumed phase runs the steps after its checkpoint again: the last record of a step counts.
    const byStep = new Map<number, (typeof curves)[number]>();
    for (const record of (await readJsonl(join(runDir, phase.name, 'metric.jsonl'))) as Array<{ data: { step: number; rewardMean: number | null; successRate: number | null; ndcgMean: number; turnsMean: number } }>) {
      byStep.set(record.data.step, { phase: phase.name, step: record.data.step, reward: record.data.rewardMean, success: record.data.successRate, ndcg: record.data.ndcgMean, turns: record.data.turnsMean });
    }
    curves.push(...[...byStep.values()].sort((a, b) => a.step - b.step));
  }
  const evalDir = (await readdir(runDir)).includes('eval-after-rl') ? 'eval-after-rl' : 'eval-before-rl';
  const trajectories = ((await readJsonl(join(runDir, evalDir, 'trajectory.jsonl'))) as Array<{ data: unknown }>).map((r) => trajectoryFromJSON(JSON.stringify(r.data)));
  const thumbnail = async (basename: string, region?: readonly number[]) => {
    try {
      let image = sharp(join(summary.corpus.slidesDir, basename));
      if (region) {
        const [x1, y1, x2, y2] = region as [number, number, number, number];
        image = image.extract({ left: Math.floor(x1), top: Math.floor(y1), width: Math.max(1, Math.ceil(x2) - Math.floor(x1)), height: Math.max(1, Math.ceil(y2) - Math.floor(y1)) });
      }
      const png = await image.resize({ width: region ? 480 : 320, withoutEnlargement: false }).png().toBuffer();
      return `data:image/png;base64,${png.toString('base64')}`;
    } catch {
      return '';
    }
  };
  const episodes: ReportEpisode[] = [];
  for (const t of trajectories.slice(0, options.episodes ?? 40)) {
    const turns: ReportEpisode['turns'] = [];
    for (const turn of t.turns) {
      const images: Array<{ label: string; src: string }> = [];
      if (turn.search?.chosenBasename) images.push({ label: turn.search.chosenBasename, src: await thumbnail(turn.search.chosenBasename) });
      if (turn.crop) images.push({ label: `crop of ${turn.crop.basename} [${turn.crop.sourceRegion.map((v) => Math.round(v)).join(', ')}]`, src: await thumbnail(turn.crop.basename, turn.crop.sourceRegion) });
      turns.push({ text: turn.text, observation: turn.observation, images });
    }
    const detail = t.rewardDetail;
    episodes.push({
      question: t.query,
      reference: t.reference,
      answer: t.finalAnswer,
      terminated: t.terminated,
      reward: t.reward,
      judge: detail?.components.judgeScore ?? null,
      ndcg: detail?.components.ndcg ?? null,
      golden: t.goldenBasenames,
      turns,
    });
  }
  // The curation funnel and analyses, when `searcher-rl curate funnel` has written them.
  const curation = await readFile(join(runDir, 'curation', 'funnel.json'), 'utf8').then((text) => JSON.parse(text) as unknown, () => null);
  const data = { runId: summary.runId, before: summary.before, after: summary.after, curves, buckets: difficultyBuckets(trajectories), evalSplit: evalDir, episodes, curation };
  // Replacer functions: a string replacement would expand `$'` and friends found in model output.
  const html = REPORT_TEMPLATE.replace('__TITLE__', () => escapeHtml(summary.runId)).replace('__DATA__', () => JSON.stringify(data).replace(/</g, '\\u003c'));
  const path = join(runDir, 'report.html');
  await writeFile(path, html);
  return path;
}

const REPORT_TEMPLATE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>searcher-rl run __TITLE__</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px}
.charts{display:grid;grid-template-columns:repeat(2,1fr);gap:16px}.chart{border:1px solid #d0d7de;border-radius:6px;padding:8px}
.chart svg{width:100%;height:180px}.turn{border-left:3px solid #1f3a5f;padding:4px 10px;margin:8px 0}
.turn pre{white-space:pre-wrap;margin:4px 0;background:#f6f8fa;padding:6px}.images img{max-width:320px;border:1px solid #d0d7de;margin:4px}
figure{display:inline-block;margin:4px}figcaption{font-size:12px;color:#57606a}
</style></head><body>
<h1>searcher-rl run <span id="run-id"></span></h1>
<div class="cards" id="summary"></div>
<h2>Training curves</h2><div class="charts" id="charts"></div>
<h2>Difficulty distribution (<span id="eval-split"></span>, NDCG per question)</h2><div class="chart" id="buckets"></div>
<div id="curation"></div>
<h2>Episodes</h2><label>Episode <select id="episode-select"></select></label><div id="episode"></div>
<script type="application/json" id="data">__DATA__</script>
<script>
const data = JSON.parse(document.getElementById('data').textContent);
const el = (tag, attrs = {}, text) => { const e = document.createElement(tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; return e; };
const pct = (x) => x === null || x === undefined ? '-' : (x * 100).toFixed(1) + '%';
document.getElementById('run-id').textContent = data.runId;
for (const [label, s] of [['before RL', data.before], ['after RL', data.after]]) {
  const card = el('div', { class: 'card' });
  card.append(el('b', {}, label), el('div', {}, 'judge success ' + pct(s.judgeSuccess)), el('div', {}, 'NDCG ' + s.ndcg.toFixed(3)), el('div', {}, 'small print ' + pct(s.smallPrintSuccess)), el('div', {}, 'crops ' + pct(s.cropRate)));
  document.getElementById('summary').append(card);
}
const NS = 'http://www.w3.org/2000/svg';
function lineChart(title, key) {
  const box = el('div', { class: 'chart', 'data-chart': key }); box.append(el('b', {}, title));
  const svg = document.createElementNS(NS, 'svg'); svg.setAttribute('viewBox', '0 0 400 180');
  const points = data.curves.map((c, i) => [i, c[key]]).filter(([, v]) => typeof v === 'number');
  const max = Math.max(1e-9, ...points.map(([, v]) => v)), n = Math.max(1, data.curves.length - 1);
  const path = points.map(([i, v], k) => (k ? 'L' : 'M') + (30 + (i / n) * 360).toFixed(1) + ' ' + (160 - (v / max) * 140).toFixed(1)).join(' ');
  const axis = document.createElementNS(NS, 'path'); axis.setAttribute('d', 'M30 20 L30 160 L390 160'); axis.setAttribute('stroke', '#8c959f'); axis.setAttribute('fill', 'none');
  const line = document.createElementNS(NS, 'path'); line.setAttribute('d', path || 'M30 160'); line.setAttribute('stroke', '#1f6feb'); line.setAttribute('fill', 'none'); line.setAttribute('stroke-width', '2'); line.setAttribute('class', 'series');
  const top = document.createElementNS(NS, 'text'); top.setAttribute('x', '2'); top.setAttribute('y', '24'); top.setAttribute('font-size', '10'); top.textContent = max.toFixed(2);
  svg.append(axis, line, top); box.append(svg); return box;
}
const charts = document.getElementById('charts');
charts.append(lineChart('Reward (mean per step)', 'reward'), lineChart('Judge success rate', 'success'), lineChart('NDCG', 'ndcg'), lineChart('Turns', 'turns'));
document.getElementById('eval-split').textContent = data.evalSplit;
(() => {
  const svg = document.createElementNS(NS, 'svg'); svg.setAttribute('viewBox', '0 0 400 140'); svg.style.height = '140px'; svg.style.width = '100%';
  const entries = [['B (> 0.7)', data.buckets.B], ['A (0.1-0.7)', data.buckets.A], ['0 (< 0.1)', data.buckets['0']]];
  const max = Math.max(1, ...entries.map(([, v]) => v));
  entries.forEach(([label, v], i) => {
    const bar = document.createElementNS(NS, 'rect'); bar.setAttribute('x', '110'); bar.setAttribute('y', String(10 + i * 40)); bar.setAttribute('height', '28'); bar.setAttribute('width', String((v / max) * 260)); bar.setAttribute('fill', '#2da44e'); bar.setAttribute('class', 'bucket');
    const t = document.createElementNS(NS, 'text'); t.setAttribute('x', '0'); t.setAttribute('y', String(29 + i * 40)); t.setAttribute('font-size', '12'); t.textContent = label + ': ' + v;
    svg.append(bar, t);
  });
  document.getElementById('buckets').append(svg);
})();
if (data.curation) {
  const c = data.curation, box = document.getElementById('curation');
  box.append(el('h2', {}, 'Curation funnel (' + c.phases.phase1 + ' buckets, ' + c.phases.phase2 + ' scores)'));
  const table = el('table');
  for (const s of c.stages) { const tr = el('tr'); tr.append(el('td', {}, s.stage), el('td', {}, String(s.count)), el('td', {}, s.note || '')); table.append(tr); }
  box.append(table, el('h2', {}, 'NDCG vs judge'),
    el('p', {}, 'judge success with NDCG 0: ' + c.disagreements.judgeSuccessNdcgZero + ' (same document, other page: ' + c.disagreements.sameDocumentOtherPage + '; ungrounded: ' + c.disagreements.ungrounded + '); NDCG >= 0.5 with judge 0: ' + c.disagreements.ndcgHighJudgeZero),
    el('p', {}, 'hallucination share of judge successes: ' + (c.hallucination.share * 100).toFixed(1) + '% (' + c.hallucination.ungrounded + ' of ' + c.hallucination.judgeSuccesses + ')'),
    el('h2', {}, 'Failure causes'),
    el('p', {}, 'search failure ' + c.failureCauses.searchFailure + ', generator failure ' + c.failureCauses.generatorFailure + ', ground-truth error ' + c.failureCauses.groundTruthError + ' of ' + c.failureCauses.failures + ' failed rollouts; verification removed ' + c.verification.removed + ' of ' + c.verification.candidates + ' candidates'));
}
const select = document.getElementById('episode-select');
data.episodes.forEach((e, i) => select.append(el('option', { value: String(i) }, (i + 1) + '. ' + e.question)));
function show(i) {
  const e = data.episodes[i], box = document.getElementById('episode'); box.textContent = '';
  if (!e) { box.append(el('p', {}, 'No episodes recorded.')); return; }
  box.append(el('p', {}, 'Question: ' + e.question), el('p', {}, 'Reference: ' + e.reference + ' | answer: ' + e.answer + ' | golden: ' + e.golden.join(', ')),
    el('p', { class: 'rewards' }, 'reward ' + (e.reward === null ? 'missing' : e.reward.toFixed(3)) + ' | judge ' + (e.judge === null ? '-' : e.judge) + ' | NDCG ' + (e.ndcg === null ? '-' : e.ndcg.toFixed(3)) + ' | ended: ' + e.terminated));
  e.turns.forEach((t, k) => {
    const turn = el('div', { class: 'turn' }); turn.append(el('b', {}, 'Turn ' + (k + 1)), el('pre', {}, t.text));
    if (t.observation) turn.append(el('pre', {}, t.observation));
    const images = el('div', { class: 'images' });
    for (const img of t.images) { const f = el('figure'); const im = el('img', { src: img.src, alt: img.label }); f.append(im, el('figcaption', {}, img.label)); images.append(f); }
    turn.append(images); box.append(turn);
  });
}
select.addEventListener('change', () => show(Number(select.value)));
show(0);
</script></body></html>
`;
