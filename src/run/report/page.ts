import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const escapeHtml = (text: string) =>
  text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);

/**
 * uPlot's browser build and stylesheet, read from the installed package (so it works from `src/`
 * and `dist/` alike) and inlined: the report is one file that loads nothing. The banner's link
 * keeps the attribution without a URL scheme (a self-contained page has no http(s) reference).
 */
function uplotAssets(): { script: string; css: string } {
  const require = createRequire(import.meta.url);
  const script = readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8')
    .replace(
      /https?:\/\/github\.com\/leeoniya\/uPlot/g,
      'uPlot, MIT licence, (c) Leon Sorokin: github.com/leeoniya/uPlot',
    )
    .replace(/<\/script/gi, '<\\/script');
  const css = readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8').replace(
    /<\/style/gi,
    '<\\/style',
  );
  return { script, css };
}

/** The report page: `data` is embedded as JSON and drawn by the page's script. */
export function renderReportPage(title: string, data: unknown): string {
  const { script, css } = uplotAssets();
  const parts: Record<string, string> = {
    TITLE: escapeHtml(title),
    UPLOT_CSS: css,
    UPLOT_JS: script,
    DATA: JSON.stringify(data).replace(/</g, '\\u003c'),
    SCRIPT: PAGE_SCRIPT,
  };
  // One pass with a replacer function: inserted text (model output in the data) is never scanned for
  // placeholders, and `$'` and friends in it are not expanded.
  return REPORT_TEMPLATE.replace(
    /__(TITLE|UPLOT_CSS|UPLOT_JS|DATA|SCRIPT)__/g,
    (_, name: string) => parts[name]!,
  );
}

const REPORT_TEMPLATE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>searcher-rl run __TITLE__</title>
<style>__UPLOT_CSS__</style>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1240px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}.caption{color:#57606a;font-size:13px;margin:4px 0 10px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid #d0d7de;border-radius:6px;padding:10px 14px}
.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}.chart{border:1px solid #d0d7de;border-radius:6px;padding:8px;min-width:0}
.chart>b{display:block;margin-bottom:4px}.chart .empty{color:#57606a;padding:40px 0;text-align:center}
.u-legend{font-size:12px;text-align:left}.u-legend .u-series>*{padding:1px 4px}.u-legend th{font-weight:500}
.phase-band{position:absolute;top:0;bottom:0;pointer-events:none}.phase-band.alt{background:rgba(140,149,159,.08)}
.phase-band.boundary{border-left:2px dashed #57606a}.phase-label{position:absolute;top:2px;left:4px;font-size:11px;color:#57606a;background:rgba(255,255,255,.8);padding:0 3px;white-space:nowrap}
.buckets{display:grid;grid-template-columns:repeat(auto-fill,minmax(280px,1fr));gap:16px}
.bucket-row{display:grid;grid-template-columns:90px 1fr 90px;align-items:center;gap:6px;margin:4px 0;font-size:13px}
.bucket{height:18px;border-radius:3px;min-width:1px}.bucket.B{background:#2da44e}.bucket.A{background:#bf8700}.bucket.zero{background:#cf222e}
.turn{border-left:3px solid #1f3a5f;padding:4px 10px;margin:8px 0}
.turn pre{white-space:pre-wrap;margin:4px 0;background:#f6f8fa;padding:6px}.images img{max-width:320px;border:1px solid #d0d7de;margin:4px}
figure{display:inline-block;margin:4px;vertical-align:top}figcaption{font-size:12px;color:#57606a}
#episode-filters{display:flex;gap:12px;flex-wrap:wrap;align-items:center;margin:8px 0}#episode-filters input{width:70px}.origin{color:#57606a}
.page-figure>div{position:relative;line-height:0}.page-figure img{width:480px;max-width:none}
.crop-region{position:absolute;border:2px solid #cf222e;background:rgba(207,34,46,.12);box-sizing:border-box}.images img.crop-full{max-width:none;image-rendering:pixelated}
</style>
<script>
// uPlot formats numbers with Intl in navigator.language, which throws on tags like 'en-US@posix'
// (a C/POSIX locale): fall back to en-US there so the charts still draw.
try { new Intl.NumberFormat(navigator.language); } catch { Object.defineProperty(Navigator.prototype, 'language', { get: () => 'en-US' }); }
</script>
<script>__UPLOT_JS__</script>
</head><body>
<h1>searcher-rl run <span id="run-id"></span></h1>
<div class="cards" id="summary"></div>
<h2>Training curves</h2><p class="caption" id="curves-caption"></p><div class="charts" id="charts"></div>
<h2>Difficulty buckets</h2><p class="caption" id="buckets-caption"></p><div class="buckets" id="buckets"></div>
<div id="curation"></div>
<h2>Episodes</h2>
<div id="episode-filters"><label>Phase <select id="filter-phase"></select></label><label>Step <select id="filter-step"></select></label>
<label>Reward from <input id="filter-reward-min" type="number" step="any"></label><label>to <input id="filter-reward-max" type="number" step="any"></label>
<label>Ending <select id="filter-ending"></select></label><span id="episode-count" class="caption"></span></div>
<label>Episode <select id="episode-select"></select></label><div id="episode"></div>
<script type="application/json" id="data">__DATA__</script>
<script>__SCRIPT__</script></body></html>
`;

const PAGE_SCRIPT = `
const data = JSON.parse(document.getElementById('data').textContent);
const el = (tag, attrs = {}, text) => { const e = document.createElement(tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; return e; };
const pct = (x) => x === null || x === undefined ? '-' : (x * 100).toFixed(1) + '%';
document.getElementById('run-id').textContent = data.runId;
for (const [label, s] of [['before RL', data.before], ['after RL', data.after]]) {
  const card = el('div', { class: 'card' });
  card.append(el('b', {}, label), el('div', {}, 'judge success ' + pct(s.judgeSuccess)), el('div', {}, 'NDCG ' + s.ndcg.toFixed(3)), el('div', {}, 'small print ' + pct(s.smallPrintSuccess)), el('div', {}, 'crops ' + pct(s.cropRate)), el('div', {}, 'small print cropped ' + pct(s.smallPrintCropRate)), el('div', { 'data-figure': 'right-region' }, 'right region ' + pct(s.rightRegionRate)), el('div', { 'data-figure': 'wrong-region' }, 'wrong region ' + pct(s.wrongRegionRate)), el('div', { 'data-figure': 'needless-crops' }, 'needless crops ' + pct(s.needlessCropRate)));
  document.getElementById('summary').append(card);
}

const C = data.curves, COLORS = ['#1f6feb', '#cf222e', '#2da44e', '#8250df', '#bf8700', '#1b7c83'];
const CHARTS = [
  ['reward', 'Reward (mean per step)', 'score'], ['success', 'Judge success rate', 'share'], ['ndcg', 'NDCG (mean per step)', 'score'],
  ['turns', 'Turns (mean per step)', 'number'], ['cropRate', 'Crop rate (rollouts with a crop)', 'share'], ['smallPrintSuccess', 'Small-print success (judge full score)', 'share'],
  ['loss', 'Policy loss (the update, mean per step)', 'signed'], ['kl', 'KL to the reference (mean per step)', 'signed'], ['entropy', 'Entropy of the policy (mean per token)', 'number'],
  ['gradNorm', 'Gradient norm (mean over the step\\'s updates)', 'number'], ['clipFraction', 'Clip fraction (tokens clipped)', 'share'],
  ['rolloutTokensPerSecond', 'Rollout tokens/s', 'rate'], ['trainTokensPerSecond', 'Training tokens/s', 'rate'],
];
document.getElementById('curves-caption').textContent = 'x: the run\\'s step (phases one after another; the legend gives each phase\\'s own step). Dots: the value of each step; lines: EMA (smoothing ' + C.smoothing +
  ', restarted at each phase). Hover a chart for values. Reward per phase: ' + C.phases.map((p) => p.name + ' = ' + p.reward).join('; ') + ' (0 when the format check fails). Crop rate and small-print success come from every rollout of the step (small print: judged rollouts of small-print questions).';
const format = (kind) => (u, v) => v === null || v === undefined ? '-' : kind === 'share' ? (v * 100).toFixed(1) + '%' : kind === 'rate' ? v.toFixed(0) : v.toFixed(3);
const stepLabel = (u, v, si, idx) => idx === null || idx === undefined || C.steps[idx] === undefined ? '-' : C.steps[idx] + ' (' + C.phase[idx] + ' step ' + C.phaseStep[idx] + ')';

/** Phase bands over the plot area: a dashed boundary and the phase's name, redrawn on every draw (zoom, resize). */
function drawPhases(u) {
  for (const old of u.over.querySelectorAll('.phase-band')) old.remove();
  const width = u.over.clientWidth;
  C.phases.forEach((p, k) => {
    if (p.firstStep === null) return;
    const left = Math.max(0, u.valToPos(p.firstStep - 0.5, 'x')), right = Math.min(width, u.valToPos(p.lastStep + 0.5, 'x'));
    if (right <= left) return;
    const band = el('div', { class: 'phase-band' + (k % 2 ? ' alt' : '') + (k > 0 ? ' boundary' : ''), 'data-phase': p.name, title: p.name + ': reward ' + p.reward });
    band.style.left = left + 'px'; band.style.width = (right - left) + 'px';
    band.append(el('span', { class: 'phase-label' }, p.name));
    u.over.append(band);
  });
}

function chart(key, title, kind) {
  const box = el('div', { class: 'chart', 'data-chart': key }); box.append(el('b', {}, title));
  document.getElementById('charts').append(box);
  const values = format(kind), columns = [C.steps], series = [{ label: 'step', value: stepLabel }];
  C.phases.forEach((p, k) => {
    const mask = (xs) => xs.map((v, i) => (C.phase[i] === p.name ? v : null));
    const raw = mask(C.metrics[key].raw);
    if (raw.every((v) => v === null)) return;
    const color = COLORS[k % COLORS.length], name = key === 'reward' ? p.name + ': ' + p.reward : p.name;
    columns.push(raw, mask(C.metrics[key].smoothed));
    series.push({ label: name, stroke: color, value: values, paths: () => null, points: { show: true, size: 6, stroke: color, fill: color + '55', width: 1 } },
      { label: p.name + ' EMA', stroke: color, width: 2, value: values, spanGaps: true, points: { show: false } });
  });
  if (series.length === 1) { box.append(el('div', { class: 'empty' }, 'no values recorded')); return; }
  const all = columns.slice(1).flat().filter((v) => v !== null);
  // Room above the highest value for the phase labels; shares and scores stay within [0, 1].
  const top = Math.max(...all), bottom = Math.min(...all), ceiling = kind === 'number' || kind === 'rate' ? (top > 0 ? top * 1.25 : 1) : Math.min(1, Math.max(0.1, Math.ceil(top * 12.5) / 10));
  // A signed figure (a loss, k1's KL) spans its values, with room above for the phase labels.
  const span = top - bottom || Math.abs(top) || 1, yRange = kind === 'signed' ? [bottom - span * 0.1, top + span * 0.3] : [0, ceiling];
  new uPlot({
    width: Math.max(300, box.clientWidth - 16), height: 220,
    scales: { x: { time: false, range: (u, min, max) => [min - 0.5, max + 0.5] }, y: { range: () => yRange } },
    axes: [{ label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], size: 36, labelSize: 18 }, { values: (u, splits) => splits.map((v) => values(u, v)), size: 64 }],
    cursor: { sync: { key: 'curves' }, points: { size: 8 } },
    legend: { live: true },
    hooks: { draw: [drawPhases] },
    series,
  }, columns, box);
}
for (const [key, title, kind] of CHARTS) chart(key, title, kind);

const groups = data.bucketGroups === 'last-step' ? 'only each prompt\\'s group at the last step it was seen' : 'every (step, prompt) group of the phase';
document.getElementById('buckets-caption').textContent = 'Mean NDCG of a prompt\\'s rollouts: B > 0.7, A 0.1-0.7, 0 < 0.1 (docs/method.md#difficulty-buckets). Training phases: the mean over the n_agent rollouts of a prompt at one step, counting ' + groups +
  '. Evaluations: one greedy rollout per question, so a group is a single NDCG, not a mean.';
for (const b of data.buckets) {
  const box = el('div', { class: 'chart', 'data-buckets': b.name }), total = b.counts.B + b.counts.A + b.counts['0'];
  box.append(el('b', {}, b.name), el('div', { class: 'caption' }, b.note + ', ' + total + ' groups'));
  for (const [label, key, cls] of [['B (> 0.7)', 'B', 'B'], ['A (0.1-0.7)', 'A', 'A'], ['0 (< 0.1)', '0', 'zero']]) {
    const row = el('div', { class: 'bucket-row' }), track = el('div'), bar = el('div', { class: 'bucket ' + cls, 'data-bucket': key });
    bar.style.width = (total ? (100 * b.counts[key]) / total : 0) + '%'; track.append(bar);
    row.append(el('span', {}, label), track, el('span', { class: 'bucket-count' }, b.counts[key] + ' (' + pct(total ? b.counts[key] / total : null) + ')'));
    box.append(row);
  }
  document.getElementById('buckets').append(box);
}

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
const E = data.episodes, PAGES = data.pages, select = document.getElementById('episode-select');
const F = { phase: document.getElementById('filter-phase'), step: document.getElementById('filter-step'), min: document.getElementById('filter-reward-min'), max: document.getElementById('filter-reward-max'), ending: document.getElementById('filter-ending') };
const option = (value, text) => el('option', { value: String(value) }, text);
const runs = [...new Set(E.map((e) => e.origin.storeRun))];
F.phase.append(option('all', 'all'), ...runs.map((r) => option(r, r)));
F.phase.value = runs.includes(data.evalSplit) ? data.evalSplit : 'all';
F.ending.append(option('all', 'all'), ...[...new Set(E.map((e) => e.terminated))].sort().map((t) => option(t, t)));
function fillSteps() {
  const steps = [...new Set(E.filter((e) => F.phase.value === 'all' || e.origin.storeRun === F.phase.value).map((e) => e.origin.step))].sort((a, b) => a - b);
  F.step.textContent = ''; F.step.append(option('all', 'all'), ...steps.map((s) => option(s, String(s))));
}
/** Episodes that pass the filters; a reward bound leaves out missing rewards. */
function matching() {
  const min = F.min.value === '' ? null : Number(F.min.value), max = F.max.value === '' ? null : Number(F.max.value);
  return E.map((e, i) => [e, i]).filter(([e]) => (F.phase.value === 'all' || e.origin.storeRun === F.phase.value) && (F.step.value === 'all' || String(e.origin.step) === F.step.value)
    && (F.ending.value === 'all' || e.terminated === F.ending.value)
    && ((min === null && max === null) || (e.reward !== null && (min === null || e.reward >= min) && (max === null || e.reward <= max))));
}
let listed = [];
function refresh() {
  const list = matching(); listed = list.map(([, i]) => i); select.textContent = '';
  list.forEach(([e], k) => select.append(option(k, (k + 1) + '. ' + e.question)));
  document.getElementById('episode-count').textContent = list.length + ' of ' + E.length + ' episodes';
  show(list.length > 0 ? list[0][1] : -1);
}
const where = (o) => (o.kind === 'training' ? o.storeRun + ' step ' + o.step + ' (run step ' + o.runStep + ')' : o.storeRun + ' (evaluation)') + ', prompt ' + o.promptUid + ', rollout ' + o.rollout + ' (' + o.sampleId + ')';
function pageFigure(basename, region) {
  const page = PAGES[basename], f = el('figure', { class: region ? 'page-figure' : '' }), box = el('div');
  const im = el('img', { src: page.src, alt: basename }); box.append(im);
  if (region) {
    // The region in the page's pixels, drawn over the page shown 480 px wide.
    const k = 480 / page.width, r = el('div', { class: 'crop-region', 'data-region': region.map((v) => Math.round(v)).join(',') });
    r.style.left = region[0] * k + 'px'; r.style.top = region[1] * k + 'px'; r.style.width = (region[2] - region[0]) * k + 'px'; r.style.height = (region[3] - region[1]) * k + 'px';
    box.append(r);
  }
  f.append(box, el('figcaption', {}, region ? 'crop of ' + basename + ' [' + region.map((v) => Math.round(v)).join(', ') + '] on the page' : basename));
  return f;
}
function show(i) {
  const e = E[i], box = document.getElementById('episode'); box.textContent = '';
  if (!e) { box.append(el('p', {}, E.length === 0 ? 'No episodes recorded.' : 'No episode matches the filters.')); return; }
  box.append(el('p', {}, 'Question: ' + e.question), el('p', { class: 'origin', 'data-phase': e.origin.storeRun, 'data-step': String(e.origin.step) }, 'From: ' + where(e.origin)),
    el('p', {}, 'Reference: ' + e.reference + ' | answer: ' + e.answer + ' | golden: ' + e.golden.join(', ')),
    el('p', { class: 'rewards' }, 'reward ' + (e.reward === null ? 'missing' : e.reward.toFixed(3)) + ' | judge ' + (e.judge === null ? '-' : e.judge) + ' | NDCG ' + (e.ndcg === null ? '-' : e.ndcg.toFixed(3)) + ' | ended: ' + e.terminated));
  e.turns.forEach((t, k) => {
    const turn = el('div', { class: 'turn' }); turn.append(el('b', {}, 'Turn ' + (k + 1)), el('pre', {}, t.text));
    if (t.observation) turn.append(el('pre', {}, t.observation));
    const images = el('div', { class: 'images' });
    if (t.page) images.append(pageFigure(t.page));
    if (t.crop) {
      const full = el('figure'); full.append(el('img', { class: 'crop-full', src: t.crop.src, alt: 'crop', width: String(t.crop.width), height: String(t.crop.height) }), el('figcaption', {}, 'the crop at full size (' + t.crop.width + ' x ' + t.crop.height + ' px)'));
      images.append(pageFigure(t.crop.basename, t.crop.region), full);
    }
    turn.append(images); box.append(turn);
  });
}
select.addEventListener('change', () => show(listed[Number(select.value)]));
F.phase.addEventListener('change', () => { fillSteps(); refresh(); });
for (const f of [F.step, F.ending]) f.addEventListener('change', refresh);
for (const f of [F.min, F.max]) f.addEventListener('input', refresh);
fillSteps(); refresh();
`;
