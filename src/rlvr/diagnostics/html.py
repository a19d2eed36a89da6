"""The capture (and an optional replay) as one self-contained HTML page: inline CSS and JS, the
data embedded as JSON, no network. Four stages, as in DESIGN.md's diagram: queries with their
verification criteria → G completions → rewards, mean, std, advantages → ratios, clipping, KL,
loss and gradient. Each completion's tokens are coloured by a selectable per-token quantity. With
tool rollouts (capture `tool_mask` and `turns`), a tool observation's tokens are drawn struck out
on grey stripes, uncoloured (0 in the loss mask), and each completion with a call lists its turns in order:
the policy's segments (mask 1), the call's code and how it ended, the observation (mask 0)."""

from __future__ import annotations

import json
from typing import Any

_KEEP_OUT = ("prompt_ids", "prompt_mask", "completion_ids", "run_config")
"""Fields the page does not show; capture.json keeps them for the replay."""

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 7px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}code,.tok{font-family:ui-monospace,monospace}
.stage{color:#888;font-weight:normal}.query{border:1px solid #ddd;border-radius:6px;margin:.8em 0;padding:.5em .8em}
.comp{margin:.25em 0;display:flex;gap:.6em;align-items:baseline}.meta{min-width:17em;color:#555;font-size:12px}
.tok{white-space:pre;padding:1px 0;border-radius:2px;cursor:default}.tok.clip{outline:1px solid #000}
.bar{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #eee;z-index:2}
.formula{background:#f7f7f7;padding:.5em .8em;border-left:3px solid #999;font-family:ui-monospace,monospace;white-space:pre-wrap}
.warn{color:#a00}
.tok.obs,.obs-text{background:repeating-linear-gradient(135deg,#e6e6e6 0 3px,#fafafa 3px 6px);color:#666;text-decoration:line-through #999}
.turns{font-size:12px;margin:.1em 0 .6em 17.6em}.turns summary{color:#555;cursor:pointer}
.turns td.l{max-width:60em;white-space:pre-wrap;font-family:ui-monospace,monospace}
.turns tr.obs td{background:#f6f6f6;color:#666}.turns tr.call td{background:#fbf8ee}.fail{color:#a00}
"""

_JS = r"""
const D = JSON.parse(document.getElementById('capture-data').textContent);
const R = D.replay || null;
const N = D.completions.length, G = D.config.group_size, B = D.prompts.length;
const fmt = (x, d=4) => x === null || x === undefined ? 'null' : typeof x === 'boolean' ? String(x)
  : (x !== 0 && Math.abs(x) < Math.pow(10, 1 - d)) ? Number(x).toExponential(3) : Number(x).toFixed(d);  // tiny values keep their digits
const el = (tag, attrs={}, ...kids) => { const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (k === 'class') e.className = v; else e.setAttribute(k, v); }
  for (const k of kids) e.append(k); return e; };
const PAIRS = D.pairs || null;  // DPO: a pairwise loss, no per-token terms
const adv = (i) => D.advantages ? D.advantages[Math.floor(i / G)][i % G] : null;
const role = (i) => !PAIRS || !PAIRS.chosen ? 0 : PAIRS.chosen.includes(i) ? -1 : PAIRS.rejected.includes(i) ? 1 : 0;
const TOOLS = D.turns && D.tool_mask ? D.turns : null;  // tool rollouts: each completion's turns
const observed = (i, t) => TOOLS !== null && D.tool_mask[i][t] === 0;  // a tool observation: 0 in the loss mask
const QUANTITIES = PAIRS ? {
  pair: {label: 'role in a pair (blue: chosen, red: rejected)', get: (i, t) => role(i), center: 0},
} : {
  advantage: {label: 'advantage A_i (same on every token)', get: (i, t) => adv(i), center: 0},
  ratio: {label: 'ratio ρ = π_θ / π_old', get: (i, t) => D.ratio[i][t], center: 1},
  clipped: {label: 'clipped (gradient switched off)', get: (i, t) => D.clipped[i][t] ? 1 : 0, center: 0},
  kl: {label: 'KL estimate to π_ref', get: (i, t) => D.kl[i][t], center: 0},
  per_token_loss: {label: 'per-token loss (before aggregation)', get: (i, t) => D.per_token_loss[i][t], center: 0},
  token_weight: {label: 'weight ∂loss/∂logp (blue: pushed up)', get: (i, t) => D.token_weight[i][t], center: 0},
};
if (!PAIRS && D.versions) QUANTITIES.staleness = {label: 'staleness: the step\'s version − the version that sampled the token (rollout.max_staleness)',
  get: (i, t) => (D.source.step - 1) - D.versions[i][t], center: 0};
if (!PAIRS && D.is_weight) QUANTITIES.is_weight = {label: 'IS weight w = π_θ_old / π_sampler, truncated or masked at algo.tis_cap', get: (i, t) => D.is_weight[i][t], center: 1};
if (R) {
  QUANTITIES.replay_token_weight = {label: 'replay: weight ∂loss/∂logp', get: (i, t) => R.token_weight[i][t], center: 0};
  QUANTITIES.replay_weight_difference = {label: 'replay: weight change (new − captured)', get: (i, t) => R.token_weight_difference[i][t], center: 0};
  QUANTITIES.replay_ratio = {label: 'replay: ratio ρ', get: (i, t) => R.ratio[i][t], center: 1};
}
function colour(value, center, scale) {
  if (value === null || scale === 0) return 'transparent';
  const x = Math.max(-1, Math.min(1, (value - center) / scale));
  return x >= 0 ? `rgba(220,60,40,${0.08 + 0.72 * x})` : `rgba(40,90,220,${0.08 + 0.72 * -x})`;
}
function paint() {
  const q = QUANTITIES[document.getElementById('quantity').value];
  let scale = 0;
  for (let i = 0; i < N; i++) for (let t = 0; t < D.completions[i].tokens.length; t++)
    if (!observed(i, t)) scale = Math.max(scale, Math.abs(q.get(i, t) - q.center));
  document.getElementById('scale').textContent = `colour scale: ${q.center} ± ${fmt(scale, 5)} (red above, blue below)`;
  for (const span of document.querySelectorAll('.tok')) {
    const i = +span.dataset.i, t = +span.dataset.t;
    span.style.background = span.dataset.obs ? '' : colour(q.get(i, t), q.center, scale);  // observations keep their stripes
  }
}
function tokenTitle(i, t) {
  if (observed(i, t)) return `token: ${JSON.stringify(D.completions[i].tokens[t])}\nmask: 0 (tool observation: not sampled by ` +
    'the policy, left out of the loss, KL and entropy)';
  if (PAIRS) return `token: ${JSON.stringify(D.completions[i].tokens[t])}` + (TOOLS ? '\nmask: 1 (the policy\'s token)' : '');
  const rows = [['token', JSON.stringify(D.completions[i].tokens[t])], ['logp', D.logp[i][t]], ['old_logp', D.old_logp[i][t]],
    ['ref_logp', D.ref_logp ? D.ref_logp[i][t] : null], ['ratio', D.ratio[i][t]], ['clipped', D.clipped[i][t]],
    ['kl', D.kl[i][t]], ['per_token_loss', D.per_token_loss[i][t]], ['dloss/dlogp', D.token_weight[i][t]]];
  if (R) rows.push(['replay dloss/dlogp', R.token_weight[i][t]]);
  if (D.versions) rows.push(['sampled by version', String(D.versions[i][t])]);
  if (D.is_weight) rows.push(['IS weight', D.is_weight[i][t]], ['IS cut (above the cap)', String(D.is_cut[i][t])]);
  if (TOOLS) rows.splice(1, 0, ['mask', `${D.mask[i][t]} (the policy's token${D.mask[i][t] ? ', in the loss' : ''})`]);
  return rows.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : fmt(v, 6)}`).join('\n');
}
function stageQueries(root) {
  const table = el('table', {}, el('tr', {}, el('th', {}, 'b'), el('th', {class: 'l'}, 'prompt'), el('th', {class: 'l'}, 'verification criteria')));
  D.queries.forEach((q, b) => table.append(el('tr', {}, el('td', {}, String(b)), el('td', {class: 'l'}, el('code', {}, q.prompt)),
    el('td', {class: 'l'}, el('code', {}, JSON.stringify(q.verifier))))));
  root.append(table);
}
function stageCompletions(root) {
  if (TOOLS) root.append(toolLegend());
  for (let b = 0; b < B; b++) {
    const box = el('div', {class: 'query'}, el('div', {}, el('b', {}, `query ${b}: `), el('code', {}, D.prompts[b])));
    for (let g = 0; g < G; g++) {
      const i = b * G + g, c = D.completions[i];
      const tail = PAIRS ? ['', 'chosen', 'rejected'][[0, -1, 1].indexOf(role(i))] : `ℓ_i=${fmt(D.row_loss[i], 5)}`;
      const meta = el('span', {class: 'meta'}, `#${i} r=${fmt(D.rewards[b][g], 2)}${PAIRS ? '' : ` A=${fmt(adv(i), 3)}`} ${c.verdict || ''} ${c.finish_reason} ${tail}`);
      const toks = el('span', {});
      c.tokens.forEach((tok, t) => {
        const attrs = {class: 'tok' + (D.clipped && D.clipped[i][t] ? ' clip' : '') + (observed(i, t) ? ' obs' : ''), 'data-i': i, 'data-t': t, title: tokenTitle(i, t)};
        if (observed(i, t)) attrs['data-obs'] = '1';
        toks.append(el('span', attrs, tok));
      });
      box.append(el('div', {class: 'comp'}, meta, toks));
      if (TOOLS && (TOOLS[i].length > 1 || TOOLS[i].some(u => 'error' in u || u.call_not_run))) box.append(turnsTable(i));  // one turn, no call: the tokens say it all
    }
    root.append(box);
  }
}
function toolCounts() {
  let calls = 0, failed = 0, users = 0, obs = 0, tokens = 0;
  TOOLS.forEach((turns, i) => {
    const own = turns.filter(u => 'error' in u);
    calls += own.length; failed += own.filter(u => u.error).length; users += own.length ? 1 : 0;
    for (let t = 0; t < D.completions[i].tokens.length; t++) { tokens += 1; obs += observed(i, t) ? 1 : 0; }
  });
  return {calls, failed, users, obs, tokens};
}
function toolLegend() {
  const k = toolCounts();
  return el('div', {class: 'meta', id: 'tool-legend'}, 'Tool rollouts: a completion that called the tool lists its turns in order under it. ',
    el('span', {class: 'obs-text'}, 'striped, struck-out tokens'), ' are tool observations, 0 in the loss mask (tool_mask): the ' +
    'model reads them but no ratio, KL, loss or gradient is taken on them; the policy\'s own tokens are 1 and coloured. ' +
    `${k.calls} call${k.calls === 1 ? '' : 's'} (${k.failed} failed) in ${N} completions, ${k.users} of them called (use rate ${fmt(k.users / N, 3)}); ` +
    `${k.obs} of ${k.tokens} completion tokens are observations.`);
}
const colRange = (s, e) => e > s ? `tokens ${s}–${e - 1} (${e - s})` : "no tokens";
function turnsTable(i) {
  const c = D.completions[i], turns = TOOLS[i], text = (s, e) => c.tokens.slice(s, e).join('');
  const calls = turns.filter(u => 'error' in u || u.call_not_run);
  const table = el('table', {}, el('tr', {}, ...['turn', 'segment', 'columns', 'loss mask', 'text'].map(h => el('th', {class: h === 'text' ? 'l' : ''}, h))));
  turns.forEach((u, k) => {
    table.append(el('tr', {class: 'policy'}, el('td', {}, String(k + 1)), el('td', {class: 'l'}, 'policy'), el('td', {}, colRange(u.start, u.end)),
      el('td', {}, '1 (in the loss)'), el('td', {class: 'l'}, text(u.start, u.end))));
    if (u.call_not_run) {
      table.append(el('tr', {class: 'call'}, el('td', {}, ''), el('td', {class: 'l'}, 'tool call'), el('td', {}, ''), el('td', {}, ''),
        el('td', {class: 'l'}, 'not run: no turn left to read its output (rollout.max_turns)')));
    } else if ('error' in u) {
      const how = u.error ? el('span', {class: 'fail'}, `failed: ${u.error}`) : 'ran to the end';
      const dropped = u.dropped ? '\nits observation did not fit in rollout.max_new_tokens: dropped, the completion ends here' : '';
      table.append(el('tr', {class: 'call'}, el('td', {}, ''), el('td', {class: 'l'}, 'tool call'), el('td', {}, ''), el('td', {}, ''),
        el('td', {class: 'l'}, `code: ${u.code}\n`, how, `\noutput: ${JSON.stringify(u.output)}${dropped}`)));
    }
    if ('obs_start' in u) {
      table.append(el('tr', {class: 'obs'}, el('td', {}, ''), el('td', {class: 'l'}, 'observation'), el('td', {}, colRange(u.obs_start, u.obs_end)),
        el('td', {}, '0 (masked out)'), el('td', {class: 'l'}, el('span', {class: 'obs-text'}, text(u.obs_start, u.obs_end)))));
    }
  });
  const failed = calls.filter(u => u.error).length;
  const summary = el('summary', {}, `${turns.length} turn${turns.length === 1 ? '' : 's'}, ${calls.length ? `${calls.length} call${calls.length === 1 ? '' : 's'}` : 'no call'}` +
    (failed ? ` (${failed} failed)` : '') + `; ${turns.reduce((a, u) => a + ('obs_start' in u ? u.obs_end - u.obs_start : 0), 0)} observation tokens masked out`);
  return el('details', {class: 'turns', 'data-i': i, open: ''}, summary, table);
}
function stagePairs(root) {
  const p = PAIRS, head = el('tr', {}, ...['pair', 'chosen', 'rejected', 'log π_θ chosen', 'log π_θ rejected', 'log π_ref chosen', 'log π_ref rejected', 'margin'].map(h => el('th', {}, h)));
  const table = el('table', {}, head);
  (p.chosen || []).forEach((c, m) => table.append(el('tr', {}, el('td', {}, String(m)), el('td', {}, `#${c}`), el('td', {}, `#${p.rejected[m]}`),
    ...[p.policy_chosen[m], p.policy_rejected[m], p.ref_chosen[m], p.ref_rejected[m], p.margins[m]].map(v => el('td', {}, fmt(v, 4))))));
  root.append(p.chosen ? table : el('div', {}, 'no group held both a pass and a fail: no pair, no update'));
}
function stageAdvantages(root) {
  const head = el('tr', {}, el('th', {}, 'b'));
  for (let g = 0; g < G; g++) head.append(el('th', {}, `r_${g}`));
  head.append(el('th', {}, 'μ'), el('th', {}, 'σ'));
  for (let g = 0; g < G; g++) head.append(el('th', {}, `A_${g}`));
  const table = el('table', {}, head);
  for (let b = 0; b < B; b++) {
    const row = el('tr', {}, el('td', {}, String(b)));
    D.rewards[b].forEach(r => row.append(el('td', {}, fmt(r, 2))));
    row.append(el('td', {}, fmt(D.group_mean ? D.group_mean[b] : null)), el('td', {}, fmt(D.group_std ? D.group_std[b] : null)));
    (D.advantages ? D.advantages[b] : Array(G).fill(null)).forEach(a => row.append(el('td', {}, fmt(a, 3))));
    table.append(row);
  }
  root.append(table);
  if (PAIRS) stagePairs(root);
}
function stageLoss(root) {
  const c = D.config, n = D.counts;
  if (PAIRS) {
    const s = D.stats;
    root.append(el('div', {class: 'formula'},
      `loss = mean over the M pairs of −log σ(β · margin), margin = (log π_θ/π_ref)(chosen) − (log π_θ/π_ref)(rejected)   (${c.algorithm})\n` +
      `trainer's loss ${fmt(D.loss, 6)}; rewards/margins ${fmt(s['rewards/margins'], 6)}; rewards/accuracies ${fmt(s['rewards/accuracies'], 4)}\n` +
      `grad_norm ${fmt(D.grad_norm, 6)} (before clipping to max_grad_norm); update_norm ‖Δθ‖ ${fmt(D.update_norm, 6)} at lr ${D.learning_rate}`));
    return;
  }
  const norm = {sequence_mean: `Σ_i (Σ_t ℓ_it / |o_i|) / ${n.num_sequences}`, token_mean: `Σ_i Σ_t ℓ_it / ${n.num_tokens}`,
    constant: `Σ_i Σ_t ℓ_it / (${n.num_sequences} · ${n.max_tokens})`}[c.aggregation];
  const s = D.stats;
  root.append(el('div', {class: 'formula'},
    `ℓ_it = −min(ρ_it A_i, clip(ρ_it, 1−${c.epsilon}, 1+${c.epsilon_high}) A_i) + ${c.beta}·KL_${c.kl_estimator}   (${c.algorithm}${c.algorithm === 'gspo' ? ': ρ is the sequence ratio' : ''})\n` +
    `loss = ${norm}   [aggregation ${c.aggregation}] = Σ_i ℓ_i = ${fmt(D.row_loss.reduce((a, x) => a + x, 0), 6)}\n` +
    `trainer's loss ${fmt(D.loss, 6)}; recomputed from these tensors ${fmt(D.loss_recomputed, 6)}\n` +
    `mean KL ${fmt(s.kl, 6)}; ratio mean ${fmt(s.ratio_mean, 6)}; clipped tokens: low ${fmt(s['clip_ratio/low_mean'])}, high ${fmt(s['clip_ratio/high_mean'])}\n` +
    `grad_norm ${fmt(D.grad_norm, 6)} (before clipping to max_grad_norm); update_norm ‖Δθ‖ ${fmt(D.update_norm, 6)} at lr ${D.learning_rate}\n` +
    `grad/variance ${fmt(D.grad_noise['grad/variance'], 8)}; grad/noise_scale ${fmt(D.grad_noise['grad/noise_scale'], 2)} (null with one micro-batch)` +
    (TOOLS ? `\ntool observations: ${toolCounts().obs} of ${toolCounts().tokens} completion tokens are 0 in the mask: out of the loss, ` +
      `the KL and the entropy; the ${n.num_tokens} tokens counted are the policy's` : '')));
}
function stageReplay(root) {
  if (!R) return;
  root.append(el('h2', {}, 'Replay ', el('span', {class: 'stage'}, '(same batch and weights, other settings)')));
  root.append(el('div', {class: 'formula'}, `settings: ${R.overrides.join(' ')}\n` +
    `loss ${fmt(R.loss_before, 6)} → ${fmt(R.loss_after, 6)} (Δ ${fmt(R.loss_difference, 6)})\n` +
    `gradient norm ${fmt(R.grad_norm_before, 6)} → ${fmt(R.grad_norm_after, 6)}; ‖g_new − g_captured‖ ${fmt(R.grad_difference_norm, 6)}; cosine ${fmt(R.grad_cosine, 6)}\n` +
    `largest change of a per-token weight ${fmt(R.token_weight_difference_max, 6)} (colour by "replay: weight change" above)`));
}
function build() {
  const src = D.source;
  document.getElementById('source').textContent = `step ${src.step} of ${src.kind === 'run' ? src.run : 'a fresh run'}, policy: ${src.policy}`;
  if (src.warning) document.getElementById('source').append(el('div', {class: 'warn'}, src.warning));
  const cfg = el('table', {}, el('tr', {}, ...Object.keys(D.config).map(k => el('th', {}, k))),
    el('tr', {}, ...Object.values(D.config).map(v => el('td', {}, String(v)))));
  document.getElementById('config').append(cfg);
  const select = document.getElementById('quantity');
  for (const [k, q] of Object.entries(QUANTITIES)) select.append(el('option', {value: k}, q.label));
  select.value = R ? 'replay_weight_difference' : PAIRS ? 'pair' : 'token_weight';
  select.addEventListener('change', paint);
  stageQueries(document.getElementById('stage1'));
  stageCompletions(document.getElementById('stage2'));
  stageAdvantages(document.getElementById('stage3'));
  stageLoss(document.getElementById('stage4'));
  stageReplay(document.getElementById('replay'));
  paint();
}
build();
"""

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rlvr inspect: one update</title>
<style>@CSS@</style></head><body>
<h1>rlvr inspect: one update</h1>
<div id="source"></div><div id="config"></div>
<h2>1. Queries <span class="stage">with their verification criteria</span></h2><div id="stage1"></div>
<h2>2. G completions <span class="stage">per query; hover a token for its numbers</span></h2>
<div class="bar">colour tokens by <select id="quantity"></select> <span id="scale"></span>
 <span class="meta">(outlined: clipped)</span></div><div id="stage2"></div>
<h2>3. Rewards, mean, std, advantages <span class="stage">A = (r − μ) / (σ + ε), per group</span></h2><div id="stage3"></div>
<h2>4. Ratios, clipping, KL, loss, gradient</h2><div id="stage4"></div>
<div id="replay"></div>
<script type="application/json" id="capture-data">@DATA@</script>
<script>@JS@</script>
</body></html>
"""


def render_capture(capture: dict[str, Any], replay: dict[str, Any] | None = None) -> str:
    """The page for `capture` (and `replay`, a result of replay.replay, if given)."""
    data = {k: v for k, v in capture.items() if k not in _KEEP_OUT}
    if replay is not None:
        data["replay"] = replay
    text = json.dumps(data, allow_nan=False).replace(
        "</", "<\\/"
    )  # a "</script>" inside a completion must not end the block
    return _PAGE.replace("@CSS@", _CSS).replace("@JS@", _JS).replace("@DATA@", text)
