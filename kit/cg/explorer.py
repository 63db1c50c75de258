"""The Competency Gaps concept explorer: ONE self-contained HTML file (the paper's web app, Fig. 6).

Inline CSS and JavaScript, the data embedded as JSON; no server, no network, no external file.
It shows:

- a concept table (id, label, X_bench, X_model, coverage / model-gap flags): a search box
  (``#search``, matches label or id), a flag filter (``#flag``), sortable columns (click a header);
- a detail view per concept (click a row): chi_bench and chi_model per benchmark, its
  top-activating contexts, and its most activating datapoints, correct vs incorrect;
- the benchmark overlap grid (Jaccard of covered-concept sets, Fig. 14).

Use :func:`explorer_data` to assemble the payload from arrays and :func:`write_explorer` to write it.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kit.cg import metrics as cg
from kit.core.paths import atomic_write_text


def _num(x) -> float | None:
    x = float(x)
    return round(x, 5) if math.isfinite(x) else None


def top_items(acts: cg.Acts, concept: int, n: int) -> list[int]:
    """Indices of the ``n`` items with the largest activation of ``concept`` (active ones only)."""
    col = acts[:, [concept]] if sp.issparse(acts) else acts[:, concept]  # CSC makes this cheap
    col = np.asarray(col.toarray() if sp.issparse(col) else col).ravel()
    order = np.argsort(-col, kind="stable")[:n]
    return [int(i) for i in order if col[i] > 0]


def explorer_data(acts_by_benchmark: Mapping[str, cg.Acts], texts_by_benchmark: Mapping[str, Sequence[str]],
                  model_acts: Mapping[str, cg.Acts] | None = None, model_scores: Mapping[str, Sequence[float]] | None = None,
                  model_texts: Mapping[str, Sequence[str]] | None = None, labels: Sequence[str] | None = None,
                  contexts: Sequence[Sequence[dict]] | None = None, n_examples: int = 3, max_chars: int = 300,
                  title: str = "Competency Gaps concept explorer", model_name: str = "",
                  concepts: Sequence[int] | None = None) -> dict:
    """The explorer's JSON payload.

    Coverage (X_bench, chi_bench, flags, overlap) comes from ``acts_by_benchmark`` (items x
    concepts per benchmark, texts in ``texts_by_benchmark``); performance (X_model, chi_model,
    correct vs incorrect datapoints) from one model's ``model_acts`` / ``model_scores`` /
    ``model_texts`` (per benchmark it was scored on; may be None). ``labels`` / ``contexts``: per
    concept. ``concepts``: which concepts to embed (default all). Item texts are truncated to
    ``max_chars``.
    """
    model_acts = {b: sp.csc_matrix(a) if sp.issparse(a) else np.asarray(a) for b, a in (model_acts or {}).items()}
    model_scores = dict(model_scores or {})
    table = cg.concept_table(acts_by_benchmark, None, labels)
    n = len(table)
    xm = cg.x_model(model_acts, model_scores) if model_acts else np.full(n, np.nan)
    gap = cg.model_gap_classes(xm) if model_acts else np.full(n, "", dtype=object)
    chib = cg.chi_bench_table(acts_by_benchmark)
    chim = cg.chi_model_table(model_acts, model_scores) if model_acts else pd.DataFrame(index=chib.index)
    overlap = cg.jaccard_overlap(acts_by_benchmark)
    cov_acts = {b: sp.csc_matrix(a) if sp.issparse(a) else np.asarray(a) for b, a in acts_by_benchmark.items()}
    concepts = range(n) if concepts is None else concepts
    items: dict[str, dict] = {}

    def add_item(key: str, bench: str, text: str) -> None:
        if key not in items:
            items[key] = {"benchmark": bench, "text": text[:max_chars] + ("…" if len(text) > max_chars else "")}

    rows = []
    for c in concepts:
        c = int(c)
        examples = {"correct": [], "incorrect": [], "unscored": []}
        for b, a in model_acts.items():
            sc = np.asarray(model_scores[b], dtype=float)
            for i in top_items(a, c, n_examples * 4):
                key = f"{model_name or 'model'}:{b}#{i}"
                examples["correct" if sc[i] >= 0.5 else "incorrect"].append((float(a[i, c]), key))
                add_item(key, f"{b} ({model_name})" if model_name else b, str(model_texts[b][i]) if model_texts else "")
        for b, a in cov_acts.items():
            for i in top_items(a, c, n_examples):
                key = f"{b}#{i}"
                examples["unscored"].append((float(a[i, c]), key))
                add_item(key, b, str(texts_by_benchmark[b][i]))
        ex = {k: [key for _, key in sorted(v, key=lambda t: -t[0])[:n_examples]] for k, v in examples.items()}
        rows.append({
            "id": c, "label": str(table.loc[c, "label"]), "x_bench": _num(table.loc[c, "x_bench"]),
            "coverage": str(table.loc[c, "coverage"]), "x_model": _num(xm[c]), "model_gap": str(gap[c]),
            "chi_bench": {b: _num(chib.loc[c, b]) for b in chib.columns},
            "chi_model": {b: _num(chim.loc[c, b]) for b in chim.columns},
            "contexts": [{"word": x["word"], "context": x["context"], "value": x["value"]}
                         for x in (contexts[c][:5] if contexts is not None else [])],
            "examples": ex,
        })
    return {"title": title, "benchmarks": list(dict.fromkeys([*acts_by_benchmark, *model_acts])),
            "scored": list(model_acts), "model": model_name, "concepts": rows, "items": items,
            "overlap": {"names": list(overlap.index), "values": [[_num(v) for v in row] for row in overlap.values]}}


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
#controls{display:flex;gap:1em;align-items:center;margin:.5em 0}
#search{width:24em;padding:.3em}
table{border-collapse:collapse;font-size:.85em}
th,td{border-bottom:1px solid #ddd;padding:.2em .5em;text-align:left}
th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
th.sorted-asc::after{content:" \\25B2"} th.sorted-desc::after{content:" \\25BC"}
#concepts tbody tr{cursor:pointer} #concepts tbody tr:hover{background:#eef}
tr.selected{background:#dde !important}
.flag{display:inline-block;padding:0 .4em;border-radius:.6em;font-size:.8em;color:#fff}
.missing{background:#c0392b}.under{background:#e67e22}.over{background:#2980b9}.gap{background:#8e44ad}
.worst-decile{background:#d35400}.best-decile{background:#27ae60}
#layout{display:flex;gap:2em;align-items:flex-start}
#tablewrap{max-height:70vh;overflow:auto;flex:3} #detail{flex:2;min-width:22em}
.ex{border-left:3px solid #ccc;padding:.2em .5em;margin:.3em 0;font-size:.8em;white-space:pre-wrap}
.ex.correct{border-color:#27ae60}.ex.incorrect{border-color:#c0392b}
#overlap td{text-align:center;min-width:3em}
"""

_JS = r"""
const DATA = JSON.parse(document.getElementById('cg-data').textContent);
const state = {sortKey: 'x_bench', sortDir: -1, query: '', flag: 'all', selected: null};
const MAX_ROWS = 500;
const fmt = v => (v === null || v === undefined) ? '—' : Number(v).toFixed(3);
const esc = s => String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
function flags(c) {
  let out = '';
  if (c.coverage && c.coverage !== 'normal') out += `<span class="flag ${c.coverage}">${c.coverage}</span> `;
  if (c.model_gap && !['normal','undefined',''].includes(c.model_gap)) out += `<span class="flag ${c.model_gap}">${c.model_gap}</span>`;
  return out;
}
function matches(c) {
  const q = state.query.trim().toLowerCase();
  if (q && !(c.label.toLowerCase().includes(q) || String(c.id) === q)) return false;
  if (state.flag === 'all') return true;
  return c.coverage === state.flag || c.model_gap === state.flag;
}
function render() {
  const rows = DATA.concepts.filter(matches);
  const k = state.sortKey, d = state.sortDir;
  rows.sort((a, b) => {
    let x = a[k], y = b[k];
    if (x === null || x === undefined) return 1; if (y === null || y === undefined) return -1;
    if (typeof x === 'string') return d * x.localeCompare(y);
    return d * (x - y);
  });
  const body = document.querySelector('#concepts tbody');
  body.innerHTML = rows.slice(0, MAX_ROWS).map(c =>
    `<tr data-id="${c.id}" class="${c.id === state.selected ? 'selected' : ''}"><td>${c.id}</td><td class="label">${esc(c.label)}</td>` +
    `<td>${fmt(c.x_bench)}</td><td>${fmt(c.x_model)}</td><td>${flags(c)}</td></tr>`).join('');
  document.getElementById('count').textContent =
    `${rows.length} of ${DATA.concepts.length} concepts` + (rows.length > MAX_ROWS ? ` (first ${MAX_ROWS} shown)` : '');
  document.querySelectorAll('#concepts th').forEach(th => {
    th.classList.remove('sorted-asc', 'sorted-desc');
    if (th.dataset.key === k) th.classList.add(d > 0 ? 'sorted-asc' : 'sorted-desc');
  });
}
function detail(id) {
  state.selected = id;
  const c = DATA.concepts.find(x => x.id === id);
  const el = document.getElementById('detail');
  let h = `<h2>Concept ${c.id}: ${esc(c.label)}</h2><p>X_bench ${fmt(c.x_bench)} · X_model ${fmt(c.x_model)} ${flags(c)}</p>`;
  h += '<table><tr><th>benchmark</th><th>chi_bench</th><th>chi_model</th></tr>' + DATA.benchmarks.map(b =>
    `<tr><td>${esc(b)}</td><td>${fmt(c.chi_bench[b])}</td><td>${fmt(c.chi_model[b])}</td></tr>`).join('') + '</table>';
  if (c.contexts.length) h += '<h3>Top-activating contexts</h3>' + c.contexts.map(x =>
    `<div class="ex">${esc(x.context)} <small>(${fmt(x.value)})</small></div>`).join('');
  for (const kind of ['correct', 'incorrect', 'unscored']) {
    const ex = c.examples[kind] || [];
    if (!ex.length) continue;
    h += `<h3>Most activating datapoints: ${kind}</h3>` + ex.map(key => {
      const it = DATA.items[key];
      return `<div class="ex ${kind}"><b>${esc(it.benchmark)}</b>: ${esc(it.text)}</div>`;
    }).join('');
  }
  el.innerHTML = h;
  render();
}
function overlap() {
  const o = DATA.overlap, t = document.getElementById('overlap');
  let h = '<tr><th></th>' + o.names.map(n => `<th>${esc(n)}</th>`).join('') + '</tr>';
  o.values.forEach((row, i) => {
    h += `<tr><th>${esc(o.names[i])}</th>` + row.map(v =>
      `<td style="background:rgba(41,128,185,${v === null ? 0 : v})">${fmt(v)}</td>`).join('') + '</tr>';
  });
  t.innerHTML = h;
}
document.getElementById('search').addEventListener('input', e => { state.query = e.target.value; render(); });
document.getElementById('flag').addEventListener('change', e => { state.flag = e.target.value; render(); });
document.querySelectorAll('#concepts th').forEach(th => th.addEventListener('click', () => {
  const k = th.dataset.key;
  state.sortDir = (state.sortKey === k) ? -state.sortDir : (k === 'label' || k === 'id' ? 1 : -1);
  state.sortKey = k; render();
}));
document.querySelector('#concepts tbody').addEventListener('click', e => {
  const tr = e.target.closest('tr'); if (tr) detail(Number(tr.dataset.id));
});
document.title = DATA.title; document.getElementById('title').textContent = DATA.title;
overlap(); render();
"""


def render_html(data: dict) -> str:
    """The explorer page with ``data`` embedded (``</`` escaped so text cannot close the script)."""
    payload = json.dumps(data, ensure_ascii=False, allow_nan=False).replace("</", "<\\/")
    flags = ["all", "missing", "under", "over", "gap", "worst-decile", "best-decile"]
    options = "".join(f'<option value="{f}">{f}</option>' for f in flags)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.get("title", "Concept explorer"))}</title>
<style>{_CSS}</style></head>
<body>
<h1 id="title"></h1>
<p>Concepts of the SAE dictionary with their cross-benchmark coverage (X_bench) and model performance
(X_model), Competency Gaps section 3. Click a row for details; click a header to sort.</p>
<div id="controls"><input id="search" type="search" placeholder="search concept labels or id…">
<label>flag <select id="flag">{options}</select></label><span id="count"></span></div>
<div id="layout"><div id="tablewrap"><table id="concepts"><thead><tr>
<th data-key="id">id</th><th data-key="label">label</th><th data-key="x_bench">X_bench</th>
<th data-key="x_model">X_model</th><th data-key="coverage">flags</th></tr></thead><tbody></tbody></table></div>
<div id="detail"><p>Select a concept.</p></div></div>
<h2>Benchmark overlap (Jaccard of covered concepts)</h2><table id="overlap"></table>
<script id="cg-data" type="application/json">{payload}</script>
<script>{_JS}</script>
</body></html>
"""


def write_explorer(path: str | Path, data: dict) -> Path:
    """Write the self-contained explorer HTML for ``data`` (from :func:`explorer_data`) atomically."""
    path = Path(path)
    if path.suffix != ".html":
        raise ValueError(f"explorer path {path} must end in .html")
    atomic_write_text(path, render_html(data))
    return path
