"""The Competency Gaps concept explorer: ONE self-contained HTML file (the paper's web app, Figs. 6,
21-25).

Inline CSS and JavaScript, the data embedded as JSON; no server, no network, no external file.
It shows, for the whole dictionary (every concept, none capped; the table renders 200 rows at a
time as it is scrolled, a concept's details are parsed only when it is opened):

- a concept table (id, label, X_bench, X_model of the chosen model, flags): search (``#search``,
  label or id), flag filter (``#flag``), model selector (``#model``), sortable columns;
- a detail view per concept: chi_bench and every model's chi_model per benchmark, its
  top-activating contexts, its most activating datapoints (per model correct vs incorrect), each
  with its full item and response text on demand;
- coverage for a chosen subset of benchmarks (``#subset`` checkboxes, Fig. 24): X_bench, the
  coverage classes and their distribution recomputed in the page;
- the benchmark overlap grid (Jaccard of covered sets, Fig. 14) and the cross-benchmark score
  correlation grid (Spearman over concepts of chi_bench, and of chi_model per model x benchmark,
  Fig. 25);
- an analysis-metadata panel (SAE, settings, items per benchmark, models and accuracies).

Use :func:`explorer_data` (plain arrays) or :func:`suite_explorer_data` (a
:class:`kit.cg.suite.Suite`) to assemble the payload and :func:`write_explorer` to write it.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kit.cg import metrics as cg
from kit.cg import robustness as cg_robustness
from kit.core.paths import atomic_write_text


def _num(x) -> float | None:
    """JSON number with 6 significant digits (relative precision: eps-sized values survive), None
    for NaN."""
    x = float(x)
    return float(f"{x:.6g}") if math.isfinite(x) else None


def _nums(xs) -> list[float | None]:
    return [_num(x) for x in np.asarray(xs, dtype=float)]


def top_items(acts: cg.Acts, concept: int, n: int) -> list[int]:
    """Indices of the ``n`` items with the largest activation of ``concept`` (active ones only)."""
    col: Any = acts[:, [concept]] if sp.issparse(acts) else acts[:, concept]
    col = np.asarray(col.toarray() if sp.issparse(col) else col).ravel()
    order = np.argsort(-col, kind="stable")[:n]
    return [int(i) for i in order if col[i] > 0]


def top_items_all(acts: cg.Acts, n: int) -> list[list[tuple[float, int]]]:
    """Per concept, its ``n`` most activating items as (activation, item index), strongest first,
    ties to the lower index; one pass over a CSC copy instead of a column extraction per concept."""
    m: Any
    m = sp.csc_matrix(acts, dtype=np.float64)  # scipy has no annotations (shape reads Optional)
    m.eliminate_zeros()
    out = []
    for j in range(m.shape[1]):
        lo, hi = m.indptr[j], m.indptr[j + 1]
        rows, vals = m.indices[lo:hi], m.data[lo:hi]
        order = np.lexsort((rows, -vals))[:n]
        out.append([(float(vals[k]), int(rows[k])) for k in order])
    return out


def _grid(table: pd.DataFrame) -> dict:
    return {
        "names": [str(x) for x in table.columns],
        "values": [_nums(row) for row in table.to_numpy()],
    }


def _corr(table: pd.DataFrame) -> dict:
    """Spearman over concepts between columns, on the concepts defined in both (at least 3)."""
    return _grid(table.corr(method="spearman", min_periods=3))


def explorer_data(
    acts_by_benchmark: Mapping[str, cg.Acts],
    texts_by_benchmark: Mapping[str, Sequence[str]],
    models: Mapping[str, Mapping[str, Any]] | None = None,
    labels: Sequence[str] | None = None,
    contexts: Sequence[Sequence[dict]] | None = None,
    n_examples: int = 3,
    title: str = "Competency Gaps concept explorer",
    denominator: str = "all",
    eps: float = cg.EPSILON,
    meta: Mapping[str, Any] | None = None,
) -> dict:
    """The explorer's payload for the whole dictionary: ``{"data", "details", "items"}``.

    Coverage (X_bench with Eq. 3's ``denominator``, chi_bench, classes, overlap) comes from
    ``acts_by_benchmark`` (items x concepts) with texts ``texts_by_benchmark``. ``models``: per
    model a mapping with ``acts``, ``scores``, ``texts`` (per benchmark it was scored on) and
    optionally ``responses`` (per benchmark) and ``significance`` (per concept, a class of
    :meth:`kit.cg.significance.GapTest.classes`). ``labels`` / ``contexts``: per concept; ``meta``:
    shown in the analysis panel. Item texts are kept whole (shown truncated, full text on demand).
    """
    models = dict(models or {})
    n = cg._check_suite(acts_by_benchmark)
    labels = list(labels) if labels is not None else [""] * n
    xb = cg.x_bench(acts_by_benchmark, denominator)
    chib = cg.chi_bench_table(acts_by_benchmark)
    items: list[dict] = []
    index: dict[tuple, int] = {}

    def item(key: tuple, entry: dict) -> int:
        if key not in index:
            index[key] = len(items)
            items.append(entry)
        return index[key]

    cov_top = [[] for _ in range(n)]
    for b, a in acts_by_benchmark.items():
        for c, tops in enumerate(top_items_all(a, n_examples)):
            cov_top[c] += [(v, b, i) for v, i in tops]
    details = [
        {
            "contexts": [
                {"context": x["context"], "value": x["value"]}
                for x in (contexts[c][:5] if contexts else [])
            ],
            "examples": {
                "benchmarks": [
                    item(("", b, i), {"benchmark": b, "text": str(texts_by_benchmark[b][i])})
                    for v, b, i in sorted(cov_top[c], key=lambda t: -t[0])[:n_examples]
                ]
            },
        }
        for c in range(n)
    ]
    model_payload = {}
    for name, md in models.items():
        acts, scores = md["acts"], {b: np.asarray(s, float) for b, s in md["scores"].items()}
        xm = cg.x_model(acts, scores)
        chim = cg.chi_model_table(acts, scores)
        sig = md.get("significance")
        model_payload[name] = {
            "benchmarks": list(acts),
            "accuracy": {b: _num(s.mean()) for b, s in scores.items()},
            "x_model": _nums(xm),
            "gap": [str(x) for x in cg.model_gap_classes(xm, eps)],
            "significance": None if sig is None else [str(x) for x in sig],
            "chi_model": {b: _nums(chim[b]) for b in chim.columns},
        }
        picks = [{"correct": [], "incorrect": []} for _ in range(n)]
        for b, a in acts.items():
            a = sp.csr_matrix(a)
            for kind, rows in (
                ("correct", np.flatnonzero(scores[b] >= 0.5)),
                ("incorrect", np.flatnonzero(scores[b] < 0.5)),
            ):
                for c, tops in enumerate(top_items_all(a[rows], n_examples)):
                    picks[c][kind] += [(v, b, int(rows[i])) for v, i in tops]
        for c in range(n):
            details[c]["examples"][name] = {
                kind: [
                    item(
                        (name, b, i),
                        {
                            "benchmark": b,
                            "model": name,
                            "correct": bool(scores[b][i] >= 0.5),
                            "text": str(md["texts"][b][i]),
                            **(
                                {"response": str(md["responses"][b][i])}
                                if md.get("responses")
                                else {}
                            ),
                        },
                    )
                    for v, b, i in sorted(p, key=lambda t: -t[0])[:n_examples]
                ]
                for kind, p in picks[c].items()
            }
    perf = pd.DataFrame(
        {f"{m} / {b}": chi for m, p in model_payload.items() for b, chi in p["chi_model"].items()},
        dtype=float,
    )
    info = {
        "concepts": n,
        "benchmarks (coverage items)": {b: int(a.shape[0]) for b, a in acts_by_benchmark.items()},
        "Eq. 3 denominator": denominator,
        "epsilon": eps,
        "models (per benchmark: accuracy, scored items)": {
            m: {b: [p["accuracy"][b], int(models[m]["acts"][b].shape[0])] for b in p["benchmarks"]}
            for m, p in model_payload.items()
        },
        **dict(meta or {}),
    }
    data = {
        "title": title,
        "meta": info,
        "eps": eps,
        "denominator": denominator,
        "n_concepts": n,
        "benchmarks": list(acts_by_benchmark),
        "concepts": {
            "label": [str(x) for x in labels],
            "x_bench": _nums(xb),
            "coverage": [str(x) for x in cg.coverage_classes(xb, eps)],
            "chi_bench": {b: _nums(chib[b]) for b in chib.columns},
        },
        "models": model_payload,
        "overlap": _grid(cg_robustness.jaccard_overlap(acts_by_benchmark, eps)),
        "correlation": {
            "coverage (chi_bench)": _corr(chib),
            "performance (chi_model)": _corr(perf),
        },
    }
    return {"data": data, "details": details, "items": items}


def suite_explorer_data(
    suite,
    n_examples: int = 3,
    eps: float = cg.EPSILON,
    significance: Mapping[str, np.ndarray] | None = None,
    meta: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> dict:
    """:func:`explorer_data` for a :class:`kit.cg.suite.Suite` and every model it scored."""
    models = {
        m: {
            "acts": suite.model_acts[m],
            "scores": suite.model_scores[m],
            "texts": suite.model_texts[m],
            "responses": suite.model_responses.get(m),
            "significance": (significance or {}).get(m),
        }
        for m in suite.model_scores
    }
    return explorer_data(
        suite.acts,
        suite.texts,
        models,
        suite.labels,
        suite.contexts,
        n_examples,
        title or f"Competency Gaps explorer: {suite.sae}",
        suite.x_bench_denominator,
        eps,
        {"SAE": suite.sae, **dict(meta or {})},
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
.controls{display:flex;gap:1em;align-items:center;margin:.5em 0;flex-wrap:wrap}
#search{width:22em;padding:.3em}
table{border-collapse:collapse;font-size:.85em}
th,td{border-bottom:1px solid #ddd;padding:.2em .5em;text-align:left}
th{cursor:pointer;background:#f4f4f4;position:sticky;top:0}
th.sorted-asc::after{content:" \\25B2"} th.sorted-desc::after{content:" \\25BC"}
#concepts tbody tr{cursor:pointer} #concepts tbody tr:hover{background:#eef}
tr.selected{background:#dde !important}
.flag{display:inline-block;padding:0 .4em;border-radius:.6em;font-size:.8em;color:#fff;margin-right:.2em}
.missing{background:#c0392b}.under{background:#e67e22}.over{background:#2980b9}.gap{background:#8e44ad}
.worst-decile{background:#d35400}.best-decile{background:#27ae60}.weak{background:#a04000}.strong{background:#1e8449}
#layout{display:flex;gap:2em;align-items:flex-start}
#tablewrap{max-height:70vh;overflow:auto;flex:3} #detail{flex:2;min-width:22em;max-height:80vh;overflow:auto}
.ex{border-left:3px solid #ccc;padding:.2em .5em;margin:.3em 0;font-size:.8em;white-space:pre-wrap}
.ex.correct{border-color:#27ae60}.ex.incorrect{border-color:#c0392b}
.ex button{font-size:.75em;margin-left:.5em}
.grid td{text-align:center;min-width:3em}
#meta pre{font-size:.8em;background:#f8f8f8;padding:.5em}
"""  # noqa: E501 (embedded CSS/JS/HTML, written out byte for byte)

_JS = r"""
const $ = id => document.getElementById(id);
const DATA = JSON.parse($('cg-data').textContent);
let ITEMS = null;  // parsed on first use
const items = () => ITEMS || (ITEMS = JSON.parse($('cg-items').textContent));
const N = DATA.n_concepts, C = DATA.concepts, MODELS = Object.keys(DATA.models), PAGE = 200, SHORT = 300;
const state = {sortKey: 'x_bench', sortDir: -1, query: '', flag: 'all', selected: null, model: MODELS[0] || null,
               shown: 0, view: [], xb: C.x_bench, cov: C.coverage, subset: DATA.benchmarks.slice()};
const fmt = v => (v === null || v === undefined) ? '—' : Number(v).toPrecision(3);
const esc = s => String(s).replace(/[&<>"]/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const M = () => state.model ? DATA.models[state.model] : null;
function row(i) {
  const m = M();
  return {id: i, label: C.label[i], x_bench: state.xb[i], coverage: state.cov[i],
          x_model: m ? m.x_model[i] : null, gap: m ? m.gap[i] : '', sig: m && m.significance ? m.significance[i] : ''};
}
function flags(r) {
  let out = '';
  if (r.coverage && r.coverage !== 'normal') out += `<span class="flag ${r.coverage}">${r.coverage}</span>`;
  if (r.gap && !['normal', 'undefined', ''].includes(r.gap)) out += `<span class="flag ${r.gap}">${r.gap}</span>`;
  if (['gap', 'weak', 'strong'].includes(r.sig)) out += `<span class="flag ${r.sig}">significant ${r.sig}</span>`;
  return out;
}
function matches(r) {
  const q = state.query.trim().toLowerCase();
  if (q && !(r.label.toLowerCase().includes(q) || String(r.id) === q)) return false;
  const f = state.flag;
  if (f === 'all') return true;
  if (f.startsWith('sig-')) return r.sig === f.slice(4);
  return r.coverage === f || r.gap === f;
}
function rowHtml(r) {
  return `<tr data-id="${r.id}" class="${r.id === state.selected ? 'selected' : ''}"><td>${r.id}</td>` +
    `<td class="label">${esc(r.label)}</td><td>${fmt(r.x_bench)}</td><td>${fmt(r.x_model)}</td><td>${flags(r)}</td></tr>`;
}
function render() {
  const rows = [];
  for (let i = 0; i < N; i++) { const r = row(i); if (matches(r)) rows.push(r); }
  const k = state.sortKey, d = state.sortDir;
  rows.sort((a, b) => {
    let x = a[k], y = b[k];
    if (x === null || x === undefined) return (y === null || y === undefined) ? a.id - b.id : 1;
    if (y === null || y === undefined) return -1;
    if (typeof x === 'string') return d * x.localeCompare(y) || a.id - b.id;
    return d * (x - y) || a.id - b.id;
  });
  state.view = rows; state.shown = 0;
  document.querySelector('#concepts tbody').innerHTML = '';
  more();
  document.querySelectorAll('#concepts th').forEach(th => {
    th.classList.remove('sorted-asc', 'sorted-desc');
    if (th.dataset.key === k) th.classList.add(d > 0 ? 'sorted-asc' : 'sorted-desc');
  });
}
function more() {  // lazy rendering: the next PAGE rows of the current view
  const next = state.view.slice(state.shown, state.shown + PAGE);
  document.querySelector('#concepts tbody').insertAdjacentHTML('beforeend', next.map(rowHtml).join(''));
  state.shown += next.length;
  $('count').textContent = `${state.view.length} of ${N} concepts` +
    (state.shown < state.view.length ? ` (${state.shown} rendered; scroll for more)` : '');
}
function itemHtml(idx, kind) {
  const it = items()[idx], long = it.text.length > SHORT || it.response;
  const head = `<b>${esc(it.benchmark)}${it.model ? ' · ' + esc(it.model) : ''}</b>: `;
  return `<div class="ex ${kind}" data-item="${idx}">${head}<span class="txt">${esc(it.text.slice(0, SHORT))}` +
    `${it.text.length > SHORT ? '…' : ''}</span>${long ? '<button class="full">full text</button>' : ''}</div>`;
}
function showFull(div) {
  const it = items()[Number(div.dataset.item)];
  div.querySelector('.txt').textContent = it.text + (it.response ? '\n\n— response —\n' + it.response : '');
  div.querySelector('button').remove();
}
function detail(id) {
  state.selected = id;
  const r = row(id), det = JSON.parse($('d-' + id).textContent);  // parsed on demand
  let h = `<h2>Concept ${id}: ${esc(r.label)}</h2><p>X_bench ${fmt(r.x_bench)}` +
    (state.model ? ` · X_model (${esc(state.model)}) ${fmt(r.x_model)}` : '') + ` ${flags(r)}</p>`;
  const benches = [...new Set([...DATA.benchmarks, ...MODELS.flatMap(m => DATA.models[m].benchmarks)])];
  h += '<table><tr><th>benchmark</th><th>chi_bench</th>' + MODELS.map(m => `<th>chi_model ${esc(m)}</th>`).join('') + '</tr>' +
    benches.map(b => `<tr><td>${esc(b)}</td><td>${fmt(C.chi_bench[b] ? C.chi_bench[b][id] : null)}</td>` +
      MODELS.map(m => `<td>${fmt(DATA.models[m].chi_model[b] ? DATA.models[m].chi_model[b][id] : null)}</td>`).join('') + '</tr>').join('') + '</table>';
  if (det.contexts.length) h += '<h3>Top-activating contexts</h3>' + det.contexts.map(x =>
    `<div class="ex">${esc(x.context)} <small>(${fmt(x.value)})</small></div>`).join('');
  if (det.examples.benchmarks.length) h += '<h3>Most activating benchmark items</h3>' + det.examples.benchmarks.map(i => itemHtml(i, '')).join('');
  for (const m of MODELS) for (const kind of ['correct', 'incorrect']) {
    const ex = (det.examples[m] || {})[kind] || [];
    if (ex.length) h += `<h3>${esc(m)}: most activating, ${kind}</h3>` + ex.map(i => itemHtml(i, kind)).join('');
  }
  $('detail').innerHTML = h;
  document.querySelectorAll('#concepts tbody tr').forEach(tr => tr.classList.toggle('selected', Number(tr.dataset.id) === id));
}
function lerp(a, b, t) { const d = b - a; return t >= 0.5 ? b - d * (1 - t) : a + d * t; }  // numpy's
function percentile(sorted, p) {
  const h = (sorted.length - 1) * p / 100, lo = Math.floor(h);
  return lo + 1 < sorted.length ? lerp(sorted[lo], sorted[lo + 1], h - lo) : sorted[lo];
}
function coverage() {  // Fig. 24: X_bench (Eq. 3) and its classes over the chosen benchmarks
  const bs = state.subset;
  if (!bs.length) { $('subset-summary').textContent = 'choose at least one benchmark'; return; }
  if (bs.length === DATA.benchmarks.length) { state.xb = C.x_bench; state.cov = C.coverage; }
  else {
    const xb = new Array(N);
    for (let i = 0; i < N; i++) {
      let s = 0, k = 0;
      for (const b of bs) { const v = C.chi_bench[b][i] || 0; s += v; if (v > 0) k++; }
      xb[i] = DATA.denominator === 'active' ? (k ? s / k : 0) : s / bs.length;
    }
    const rest = xb.filter(x => x >= DATA.eps).sort((a, b) => a - b);
    const lo = rest.length ? percentile(rest, 10) : 0, hi = rest.length ? percentile(rest, 90) : 0;
    state.xb = xb;
    state.cov = xb.map(x => x < DATA.eps ? 'missing' : x <= lo ? 'under' : x >= hi ? 'over' : 'normal');
  }
  const n = c => state.cov.filter(x => x === c).length;
  $('n-missing').textContent = n('missing'); $('n-under').textContent = n('under'); $('n-over').textContent = n('over');
  const logs = state.xb.filter(x => x >= DATA.eps).map(Math.log10);
  $('subset-summary').textContent = `${bs.length} benchmark(s): ${logs.length} concepts covered`;
  hist(logs);
  render();
}
function hist(v) {
  const svg = $('subset-hist'), W = 420, H = 120, nb = 30;
  if (!v.length) { svg.innerHTML = ''; return; }
  const mn = Math.min(...v), mx = Math.max(...v), w = (mx - mn) / nb || 1, counts = new Array(nb).fill(0);
  v.forEach(x => counts[Math.min(nb - 1, Math.floor((x - mn) / w))]++);
  const top = Math.max(...counts);
  svg.innerHTML = counts.map((c, i) => `<rect x="${i * W / nb}" y="${H - 15 - (H - 20) * c / top}" width="${W / nb - 1}" ` +
    `height="${(H - 20) * c / top}" fill="#2980b9"></rect>`).join('') +
    `<text x="0" y="${H - 2}" font-size="10">log10 X_bench ${mn.toFixed(2)}</text>` +
    `<text x="${W - 40}" y="${H - 2}" font-size="10">${mx.toFixed(2)}</text>`;
}
function grid(el, o) {
  let h = '<tr><th></th>' + o.names.map(n => `<th>${esc(n)}</th>`).join('') + '</tr>';
  o.values.forEach((row, i) => {
    h += `<tr><th>${esc(o.names[i])}</th>` + row.map(v =>
      `<td style="background:rgba(41,128,185,${v === null ? 0 : Math.abs(v)})">${fmt(v)}</td>`).join('') + '</tr>';
  });
  el.innerHTML = h;
}
$('search').addEventListener('input', e => { state.query = e.target.value; render(); });
$('flag').addEventListener('change', e => { state.flag = e.target.value; render(); });
$('model').addEventListener('change', e => { state.model = e.target.value || null; render(); });
$('tablewrap').addEventListener('scroll', e => {
  const t = e.target; if (t.scrollTop + t.clientHeight >= t.scrollHeight - 50 && state.shown < state.view.length) more();
});
$('corr-kind').addEventListener('change', e => grid($('correlation'), DATA.correlation[e.target.value]));
document.querySelectorAll('#concepts th').forEach(th => th.addEventListener('click', () => {
  const k = th.dataset.key;
  state.sortDir = (state.sortKey === k) ? -state.sortDir : (k === 'label' || k === 'id' ? 1 : -1);
  state.sortKey = k; render();
}));
document.querySelector('#concepts tbody').addEventListener('click', e => {
  const tr = e.target.closest('tr'); if (tr) detail(Number(tr.dataset.id));
});
$('detail').addEventListener('click', e => { if (e.target.classList.contains('full')) showFull(e.target.closest('.ex')); });
$('subset').innerHTML = DATA.benchmarks.map(b => `<label><input type="checkbox" value="${esc(b)}" checked> ${esc(b)}</label>`).join(' ');
$('subset').addEventListener('change', () => {
  state.subset = [...document.querySelectorAll('#subset input:checked')].map(x => x.value); coverage();
});
$('model').innerHTML = MODELS.length ? MODELS.map(m => `<option value="${esc(m)}">${esc(m)}</option>`).join('') : '<option value="">(none)</option>';
$('corr-kind').innerHTML = Object.keys(DATA.correlation).map(k => `<option>${esc(k)}</option>`).join('');
document.title = DATA.title; $('title').textContent = DATA.title;
$('meta-body').textContent = JSON.stringify(DATA.meta, null, 1);
grid($('overlap'), DATA.overlap); grid($('correlation'), DATA.correlation[Object.keys(DATA.correlation)[0]]);
coverage();
"""  # noqa: E501 (embedded CSS/JS/HTML, written out byte for byte)


def _script(id_: str, obj) -> str:
    payload = json.dumps(obj, ensure_ascii=False, allow_nan=False).replace("</", "<\\/")
    return f'<script id="{id_}" type="application/json">{payload}</script>'


def render_html(payload: dict) -> str:
    """The explorer page for ``payload`` (from :func:`explorer_data`): the table data in one JSON
    block, every concept's details in its own block (parsed when opened), item texts in another
    (parsed when first shown); ``</`` is escaped so no text can close a script."""
    data = payload["data"]
    flags = [
        "all",
        "missing",
        "under",
        "over",
        "gap",
        "worst-decile",
        "best-decile",
        "sig-gap",
        "sig-weak",
        "sig-strong",
    ]
    options = "".join(
        f'<option value="{f}">{f.replace("sig-", "significant ")}</option>' for f in flags
    )
    details = "\n".join(_script(f"d-{c}", d) for c, d in enumerate(payload["details"]))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(data.get("title", "Concept explorer"))}</title>
<style>{_CSS}</style></head>
<body>
<h1 id="title"></h1>
<p>Every concept of the SAE dictionary with its cross-benchmark coverage (X_bench) and a model's performance
(X_model), Competency Gaps section 3. Click a row for details; click a header to sort. "significant" flags: the
concept's X_model beats its shuffled-correctness null after false discovery control.</p>
<details id="meta"><summary>Analysis metadata</summary><pre id="meta-body"></pre></details>
<h2>Coverage of a chosen subset of benchmarks (Fig. 24)</h2>
<div id="subset" class="controls"></div>
<p><span id="subset-summary"></span>: missing <b id="n-missing"></b>, under-represented <b id="n-under"></b>,
over-represented <b id="n-over"></b>.</p>
<svg id="subset-hist" width="420" height="120"></svg>
<h2>Concepts</h2>
<div class="controls"><input id="search" type="search" placeholder="search concept labels or id…">
<label>flag <select id="flag">{options}</select></label><label>model <select id="model"></select></label>
<span id="count"></span></div>
<div id="layout"><div id="tablewrap"><table id="concepts"><thead><tr>
<th data-key="id">id</th><th data-key="label">label</th><th data-key="x_bench">X_bench</th>
<th data-key="x_model">X_model</th><th data-key="coverage">flags</th></tr></thead><tbody></tbody></table></div>
<div id="detail"><p>Select a concept.</p></div></div>
<h2>Benchmark overlap (Jaccard of covered concepts, Fig. 14)</h2><table id="overlap" class="grid"></table>
<h2>Score correlation across benchmarks (Spearman over concepts, Fig. 25)</h2>
<select id="corr-kind"></select><table id="correlation" class="grid"></table>
{_script("cg-data", data)}
{_script("cg-items", payload["items"])}
{details}
<script>{_JS}</script>
</body></html>
"""  # noqa: E501 (embedded CSS/JS/HTML, written out byte for byte)


def write_explorer(path: str | Path, payload: dict) -> Path:
    """Write the self-contained explorer HTML for ``payload`` (from :func:`explorer_data`)
    atomically."""
    path = Path(path)
    if path.suffix != ".html":
        raise ValueError(f"explorer path {path} must end in .html")
    atomic_write_text(path, render_html(payload))
    return path
