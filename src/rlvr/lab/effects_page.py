"""The first page of the lab as one self-contained HTML document: inline CSS and JS, the data of
page_data embedded as JSON, no network. Picking a knob redraws the readings, the curves and the
table from the embedded data in the browser, with no call to the server; the time from the click to
the next painted frame is kept in ``window.rlvrRedraw`` (benchmarks/lab_redraw.py reads it).

By default the page is the shipped atlas as shipped, whatever is under the lab's folder; the *your
runs* box adds your runs as rows and dashed curves of their own (lab/yours.py)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from rlvr.diagnostics.memory_model import preset_names
from rlvr.lab.effects import CURVES, DEFAULT_MODEL, LABELS, ORDERED, load_atlas, shipped_values, view
from rlvr.lab.yours import overlay, your_values
from rlvr.studies.atlas import KNOBS


def page_data(root: str | Path | None, atlas: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the first page draws: per knob, the shipped atlas's values as shipped (rows,
    curves, estimates, readings) and, apart, your runs under root (shown when asked for)."""
    atlas = atlas if atlas is not None else load_atlas()
    models = preset_names()
    shipped = shipped_values(atlas)
    yours, elsewhere = your_values(root) if root is not None else ([], [])
    knobs = {
        knob: {
            "label": LABELS[knob],
            "ordered": knob in ORDERED,
            "shipped": view(knob, shipped.get(knob, []), models),
            "yours": overlay(knob, [v for v in yours if v.knob == knob], models),
        }
        for knob in KNOBS
    }
    return {
        "made": atlas.get("made", {}),
        "command": atlas.get("command"),
        "steps": atlas.get("steps"),
        "seeds": atlas.get("seeds"),
        "build_wall_s": atlas.get("build_wall_s"),
        "shipped_runs": len(atlas.get("runs", {})),
        "your_runs": sorted({c["dir"] for v in yours for c in v.cards}),
        "your_runs_elsewhere": elsewhere,
        "read_at": datetime.datetime.now().strftime("%H:%M:%S"),
        "root": None if root is None else str(root),
        "models": models,
        "default_model": DEFAULT_MODEL if DEFAULT_MODEL in models else models[0],
        "curves": CURVES,
        "knobs": knobs,
    }


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:.5em auto;max-width:1400px;color:#222;padding:0 .5em}
h1{font-size:1.35em;margin:.2em 0}.prov{color:#555;font-size:12.5px}.prov code{font-size:12px}
nav{display:flex;gap:.4em;flex-wrap:wrap;margin:.8em 0}nav button{font:inherit;padding:.35em .9em;border:1px solid #bbb;
border-radius:5px;background:#f6f6f6;cursor:pointer}nav button[aria-pressed=true]{background:#2b5fad;color:#fff;border-color:#2b5fad}
.controls{display:flex;gap:1.5em;align-items:center;flex-wrap:wrap;font-size:13px;margin:.3em 0 .6em}
ul.readings{margin:.3em 0 .8em;padding-left:1.2em}ul.readings li{margin:.15em 0}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:.6em}
.chart{border:1px solid #e3e3e3;border-radius:5px;padding:.2em .3em}.chart h3{font-size:12.5px;margin:.2em .3em;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:.2em 1em;font-size:12.5px;margin:.4em 0}.legend span{white-space:nowrap}
.sw{display:inline-block;width:14px;height:4px;vertical-align:middle;margin-right:4px;border-radius:2px}
table{border-collapse:collapse;margin:.6em 0;font-size:12.5px;width:100%}td,th{border:1px solid #d4d4d4;padding:3px 6px;
text-align:right;vertical-align:top}th{background:#f3f3f3;font-weight:600}td.l,th.l{text-align:left}
.sub{display:block;color:#666;font-size:11px;white-space:normal}.yours{color:#7a4b00;font-weight:600}
tr.yours td{background:#fffaf0;color:#222;font-weight:normal}tr.yours td.yours{color:#7a4b00;font-weight:600}ul.readings li.yours{color:#7a4b00;font-weight:normal}
.note{color:#555;font-size:12px}svg text{font:10.5px system-ui,sans-serif;fill:#444}
"""

_JS = r"""
const D = JSON.parse(document.getElementById('effects-data').textContent);
const COLORS = ['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#17becf','#7f7f7f','#bcbd22'];
const state = {knob: Object.keys(D.knobs)[0], model: D.default_model, yours: false, smooth: 5, logy: true};
const el = (tag, attrs={}, ...kids) => { const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (k === 'class') e.className = v; else e.setAttribute(k, v); }
  for (const k of kids) e.append(k); return e; };
const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs={}) => { const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; };
const has = (s) => s && s.mean !== null && s.mean !== undefined;
const pm = (s, f, unit='') => !has(s) ? 'n/a' : f(s.mean) + (s.sd === null || s.sd === undefined ? '' : ' ± ' + f(s.sd)) + unit;
const pc = (x) => (100 * x).toFixed(1);
const pct = (s) => pm(s, pc, '%');
const pts = (x) => (x >= 0 ? '+' : '') + (100 * x).toFixed(1);
const g3 = (x) => Math.abs(x) >= 1e6 ? Number((x / 1e6).toPrecision(3)) + 'M' : Math.abs(x) >= 1e4
  ? Number((x / 1e3).toPrecision(3)) + 'k' : Number(x.toPrecision(3)).toString();
const mib = (x) => (x / 1048576).toFixed(1) + ' MiB';
const gib = (x) => (x / 1073741824).toFixed(1) + ' GiB';
const secs = (x) => x.toFixed(0);
const SHORT = {policy_weights: 'weights', reference_weights: 'ref', kv_cache: 'kv', activations: 'act',
  policy_gradients: 'grads', policy_optimizer: 'adam', critic_weights: 'critic', critic_gradients: 'critic grads',
  critic_optimizer: 'critic adam'};

function variant() {  // the shipped atlas as shipped; your runs after it, apart, when the box is ticked
  const k = D.knobs[state.knob], yours = state.yours ? k.yours : {values: [], readings: []};
  return {values: k.shipped.values.concat(yours.values), readings: k.shipped.readings, yours: yours.readings};
}

function smooth(xs, w) {
  if (w <= 1) return xs;
  return xs.map((_, i) => { const a = Math.max(0, i - w + 1), part = xs.slice(a, i + 1);
    return part.reduce((s, x) => s + x, 0) / part.length; });
}

function chart(title, series, opts) {
  const W = 340, H = 190, L = 44, R = 8, T = 6, B = 24;
  const box = el('div', {class: 'chart', 'data-metric': opts.key});
  box.append(el('h3', {}, title));
  const s = svg('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title});
  const pts_ = series.flatMap(x => x.step.map((st, i) => [st, x.lo[i], x.hi[i]]));
  const logy = opts.log;
  const ok = (v) => !logy || v > 0;
  const ys = pts_.flatMap(p => [p[1], p[2]]).filter(v => v !== null && ok(v));
  if (!ys.length) { box.append(el('p', {class: 'note'}, opts.empty || 'not measured for these values')); return box; }
  const xmax = Math.max(...pts_.map(p => p[0]), 1), xmin = Math.min(0, ...pts_.map(p => p[0]));
  let ymin = Math.min(...ys), ymax = Math.max(...ys);
  const f = (v) => logy ? Math.log10(v) : v;
  let a = f(ymin), b = f(ymax); if (a === b) { a -= 0.5; b += 0.5; }
  const X = (v) => L + (v - xmin) / (xmax - xmin) * (W - L - R);
  const Y = (v) => T + (1 - (f(v) - a) / (b - a)) * (H - T - B);
  s.append(svg('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999'}));
  s.append(svg('line', {x1: L, y1: T, x2: L, y2: H - B, stroke: '#999'}));
  const decades = [];
  for (let e = Math.ceil(a); logy && e <= Math.floor(b); e++) decades.push(e);
  const ticks = decades.length >= 2 ? decades : [0, 1, 2, 3, 4].map(i => a + (b - a) * i / 4);  // log: powers of 10
  for (const fv of ticks) {
    const v = logy ? Math.pow(10, fv) : fv, y = Y(v);
    s.append(svg('line', {x1: L, y1: y, x2: W - R, y2: y, stroke: '#eee'}));
    const t = svg('text', {x: L - 4, y: y + 3, 'text-anchor': 'end'}); t.textContent = g3(v); s.append(t);
  }
  for (const v of [xmin, Math.round((xmin + xmax) / 2), xmax]) {
    const t = svg('text', {x: X(v), y: H - 8, 'text-anchor': 'middle'}); t.textContent = v; s.append(t);
  }
  series.forEach((x) => {
    const idx = x.step.map((_, i) => i).filter(i => ok(x.mean[i]) && ok(x.lo[i]) && ok(x.hi[i]));
    if (!idx.length) return;
    const w = opts.smooth ? state.smooth : 1;
    const m = smooth(idx.map(i => x.mean[i]), w), lo = smooth(idx.map(i => x.lo[i]), w), hi = smooth(idx.map(i => x.hi[i]), w);
    const xs = idx.map(i => X(x.step[i]));
    const band = xs.map((px, i) => `${px},${Y(hi[i])}`).concat(xs.map((px, i) => `${px},${Y(lo[i])}`).reverse());
    s.append(svg('polygon', {points: band.join(' '), fill: x.color, 'fill-opacity': 0.13, stroke: 'none'}));
    const line = svg('polyline', {points: xs.map((px, i) => `${px},${Y(m[i])}`).join(' '), fill: 'none',
      stroke: x.color, 'stroke-width': 1.8, 'data-value': x.label, 'data-source': x.source});
    if (x.source === 'yours') line.setAttribute('stroke-dasharray', '5 3');
    const tip = svg('title'); tip.textContent = `${x.label}: last ${g3(m[m.length - 1])}`; line.append(tip);
    s.append(line);
    if (xs.length <= 6) xs.forEach((px, i) => s.append(svg('circle', {cx: px, cy: Y(m[i]), r: 2.5, fill: x.color})));
  });
  box.append(s);
  return box;
}

function memoryCell(row) {
  const peak = row.memory.peak_total;
  const td = el('td', {'data-col': 'memory'}, has(peak) ? mib(peak.mean) : 'n/a');
  const parts = Object.entries(row.memory).filter(([k, s]) => k !== 'peak_total' && has(s) && s.mean > 0)
    .map(([k, s]) => `${SHORT[k] || k} ${(s.mean / 1048576).toFixed(1)}`);
  if (parts.length) td.append(el('span', {class: 'sub'}, parts.join(' · ') + ' MiB'));
  return td;
}

function estimateCell(v) {
  const est = v.estimate[state.model];
  const td = el('td', {'data-col': 'estimate'}, gib(est.peak_total));
  const top = Object.entries(est).filter(([k]) => k !== 'peak_total').sort((p, q) => q[1] - p[1]).slice(0, 3)
    .map(([k, b]) => `${SHORT[k] || k} ${(b / 1073741824).toFixed(1)}`);
  td.append(el('span', {class: 'sub'}, top.join(' · ') + ' GiB'));
  return td;
}

function table(values) {
  const t = el('table', {id: 'effects-table'});
  const head = ['value', 'runs', 'held-out pass@1 (gold) base → final', 'gain (points)', 'greedy (gold) base → final',
    'hacking rate (held-out)', 'peak memory, measured (tiny model)', `estimate: ${state.model} (per GPU)`,
    'gradient variance', 'gradient noise scale', 'wall time'];
  t.append(el('tr', {}, ...head.map((h, i) => el('th', {class: i === 0 ? 'l' : ''}, h))));
  for (const v of values) {
    const r = v.row;
    const runs = `${r.runs} (seed${r.seeds.length === 1 ? '' : 's'} ${r.seeds.join(',')}; ${r.steps.join('/')} steps)`;
    const name = el('td', {class: 'l' + (v.source === 'yours' ? ' yours' : ''), 'data-col': 'value'}, v.name);
    if (v.unfinished) { t.append(unfinishedRow(v, name)); continue; }
    t.append(el('tr', {'data-value': v.name, 'data-source': v.source, class: v.source},
      name,
      el('td', {'data-col': 'runs'}, runs),
      el('td', {'data-col': 'pass1'}, `${pct(r['pass@1 base'])} → ${pct(r['pass@1 final'])}`),
      el('td', {'data-col': 'gain'}, pm(r['pass@1 gain'], pts)),
      el('td', {'data-col': 'greedy'}, `${pct(r['greedy base'])} → ${pct(r['greedy final'])}`),
      el('td', {'data-col': 'hacking'}, pct(r['hacking final']),
        el('span', {class: 'sub'}, `pass@1: training verifier ${pct(r['train pass@1 final'])}, gold ${pct(r['pass@1 final'])}`),
        el('span', {class: 'sub'}, `wrong answers it passes: base ${pct(r['false pass base'])} → trained ${pct(r['false pass final'])}`)),
      memoryCell(r), estimateCell(v),
      el('td', {'data-col': 'variance'}, pm(r['grad variance'], g3)),
      el('td', {'data-col': 'noise'}, pm(r['noise scale'], g3)),
      el('td', {'data-col': 'wall'}, pm(r['wall s'], secs, ' s'))));
  }
  return t;
}

function unfinishedRow(v, name) {  // no summary.json: no final numbers, so it says how far it got
  const h = v.curves.heldout, last = h.step.length - 1;
  const seen = last >= 0 ? `last held-out pass@1 (gold): ${pc(h.mean[last])}% at step ${h.step[last]}`
    : 'no held-out evaluation yet: base and final come with its summary.json';
  return el('tr', {'data-value': v.name, 'data-source': v.source, class: 'yours unfinished'}, name,
    el('td', {'data-col': 'runs'}, `1 (seed ${v.row.seeds.join(',')}; unfinished)`),
    el('td', {'data-col': 'pass1', colspan: 4, class: 'l'}, `unfinished: ${v.unfinished}`, el('span', {class: 'sub'}, seen)),
    memoryCell(v.row), estimateCell(v),
    el('td', {'data-col': 'variance'}, pm(v.row['grad variance'], g3)),
    el('td', {'data-col': 'noise'}, pm(v.row['noise scale'], g3)),
    el('td', {'data-col': 'wall'}, 'unfinished'));
}

function draw() {
  const v = variant(), values = v.values;
  document.querySelectorAll('nav button').forEach(b => b.setAttribute('aria-pressed', String(b.dataset.knob === state.knob)));
  const readings = document.getElementById('readings');
  readings.replaceChildren(...v.readings.map(line => el('li', {}, line)),
    ...v.yours.map(line => el('li', {class: 'yours'}, line)));
  const coloured = values.map((x, i) => ({...x, color: COLORS[i % COLORS.length]}));
  document.getElementById('legend').replaceChildren(...coloured.map(x =>
    el('span', {class: x.source, 'data-value': x.name}, el('i', {class: 'sw', style: `background:${x.color}`}), x.name)));
  const series = (key) => coloured.map(x => ({label: x.name, color: x.color, source: x.source, ...x.curves[key]}));
  const charts = [chart('held-out pass@1, gold verifier (0-1), vs step', series('heldout'), {key: 'heldout'})];
  for (const [key, title] of Object.entries(D.curves)) {
    const log = state.logy && (key === 'kl' || key === 'grad/noise_scale');
    charts.push(chart(title + ' vs step' + (log ? ', log scale' : ''), series(key), {key, smooth: true, log,
      empty: key === 'kl' ? 'not measured: β = 0 holds no reference' : undefined}));
  }
  document.getElementById('charts').replaceChildren(...charts);
  document.getElementById('table').replaceChildren(table(values));
  if (window.frameElement) window.frameElement.style.height = (document.body.offsetHeight + 40) + 'px';  // fit, grow or shrink
  document.body.dataset.drawn = state.knob + '|' + state.model + '|' + state.yours + '|' + state.smooth + '|' + state.logy;
}

function redraw(event) {
  const start = event && event.timeStamp ? event.timeStamp : performance.now();
  draw();
  requestAnimationFrame(() => setTimeout(() => {
    window.rlvrRedraw = {drawn: document.body.dataset.drawn, ms: performance.now() - start};
  }, 0));
}

function init() {
  const m = D.made || {};
  const prov = document.getElementById('provenance');
  prov.append(`Shipped atlas: ${D.shipped_runs} runs of ${D.steps} steps, seeds ${(D.seeds || []).join(', ')}; made ${m.date} on ${m.machine} `
    + `with rlvr ${m.rlvr}${m.commit ? ' (' + m.commit + ')' : ''} by `, el('code', {}, D.command || 'rlvr atlas'),
    D.build_wall_s ? ` in ${(D.build_wall_s / 60).toFixed(1)} min. ` : '. ');
  const where = D.root || 'the lab folder', n = D.your_runs.length, off = D.your_runs_elsewhere.length;
  prov.append(n
    ? `${n} run(s) of yours under ${where} fit this page (read at ${D.read_at}): tick "your runs" to draw them beside the `
      + 'atlas as rows and dashed curves of their own, each named by what it is, grouped only with runs of the same '
      + 'length and settings, never averaged with the atlas.'
    : `No run of yours under ${where} fits this page yet (read at ${D.read_at}); a run of the atlas's default `
      + 'configuration, or one knob away from it, made with rlvr train, sweep or atlas, can be drawn here with "your runs".');
  if (off) prov.append(` ${off} other run(s) there change several knobs or settings no knob holds: see them in the One run tab.`);
  const nav = document.getElementById('knobs');
  for (const [name, k] of Object.entries(D.knobs)) {
    const b = el('button', {'data-knob': name, id: 'knob-' + name, type: 'button'}, k.label);
    b.addEventListener('click', (e) => { state.knob = name; redraw(e); });
    nav.append(b);
  }
  const model = document.getElementById('model');
  for (const name of D.models) model.append(el('option', {value: name}, name));
  model.value = state.model;
  model.addEventListener('change', (e) => { state.model = model.value; redraw(e); });
  const yours = document.getElementById('your-runs');
  yours.disabled = !D.your_runs.length;
  yours.parentElement.append(` (${D.your_runs.length})`);
  yours.addEventListener('change', (e) => { state.yours = yours.checked; redraw(e); });
  const sm = document.getElementById('smooth');
  sm.addEventListener('change', (e) => { state.smooth = Number(sm.value); redraw(e); });
  const lg = document.getElementById('logy');
  lg.addEventListener('change', (e) => { state.logy = lg.checked; redraw(e); });
  redraw();
}
init();
"""

_BODY = """
<h1>Each knob's effect, side by side</h1>
<p class="prov" id="provenance"></p>
<nav id="knobs" aria-label="knob"></nav>
<div class="controls">
<label>real model for the memory estimate <select id="model"></select></label>
<label>curves: running mean over <select id="smooth"><option value="1">1</option><option value="5" selected>5</option>
<option value="10">10</option></select> steps</label>
<label><input type="checkbox" id="logy" checked> log scale for KL and noise scale</label>
<label><input type="checkbox" id="your-runs"> your runs</label>
</div>
<ul class="readings" id="readings"></ul>
<div class="legend" id="legend"></div>
<div class="charts" id="charts"></div>
<p class="note">Lines: mean over a value's runs (seeds) at each step, then a running mean; bands: min..max over
the runs. Held-out pass@1 of the atlas's runs: 100 held-out queries x 4 samples, judged by the gold verifier, before
training (step 0), every 20 steps and after the last. Dashed lines: your runs (with "your runs" ticked), evaluated as
each run's config.yaml says.</p>
<div id="table"></div>
<p class="note">Cells: mean ± standard deviation over the runs. pass@1, its gain and greedy accuracy are judged
by the gold verifier (what the model can do, whatever it was trained against). Hacking rate: share of held-out samples the training verifier passed and gold
failed; below it, the share of wrong answers (gold fails) the training verifier passes, of the base model (the
verifier's own false passes) and of the trained one: only a rise is the policy exploiting the verifier. Measured memory: the peak of each <code>memory/*</code> metric (bytes of the tensors each part holds, on
the tiny model). Estimate: <code>rlvr memory</code> for the chosen model with this value's algorithm, G and β
(B=32, 256+1024 tokens, bf16 mixed, AdamW; fidelity and learning rate change no tensor). Gradient variance and
noise scale: the median over steps 1-5 (the same steps of every run) of <code>grad/variance</code> and
<code>grad/noise_scale</code> (in completions; n/a with one micro-batch per step, e.g. G=2). Variances are not
comparable across algorithms, whose losses are scaled differently; the noise scale, a ratio, is. Wall time: the whole run with its evaluations (the atlas's: two runs side by side
on the machine named above).</p>
"""


def render(data: dict[str, Any]) -> str:
    """The page for effects.page_data(...)."""
    payload = json.dumps(data, allow_nan=False).replace("</", "<\\/")  # no `</script>` inside the data
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rlvr lab: knobs and their effects</title>'
        f"<style>{_CSS}</style></head><body>{_BODY}"
        f'<script type="application/json" id="effects-data">{payload}</script>'
        f"<script>{_JS}</script></body></html>"
    )
