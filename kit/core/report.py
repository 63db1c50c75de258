"""The reproduction report of a run: ``report.md`` and a self-contained ``report.html``.

Read from the run directory alone (``<run>/<notebook>/results.json`` under ``claims``, written by
:func:`kit.core.claims.record`), so it works for any profile and for a run made elsewhere. One
table per paper; every claim with the paper's value, ours, our interval, the null and the verdict;
the figure a claim names is linked (markdown) or embedded (HTML, base64, so the file can be mailed).
"""

from __future__ import annotations

import base64
import html
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.core.claims import (
    ALL_VERDICTS,
    BASES,
    KINDS,
    UNDECIDABLE,
    VS_PAPER,
    _fmt,
    basis,
    headline_bases,
)
from kit.core.claims_html import VERDICT_COLOURS
from kit.core.paths import atomic_write_text

PAPERS = {
    "000": "MUI and the Utility Law (seed 000)",
    "001": "Shortcut neurons and trustworthy evaluation (seed 001)",
    "002": "Competency Gaps (seed 002)",
    "003": "Measurement-theory audits (seed 003)",
    "004": "NeuronVote (seed 004)",
}


def collect(run_dir: str | Path) -> tuple[list[dict], list[str]]:
    """All claims of a run (each with its notebook) and the notebooks that recorded none."""
    run_dir = Path(run_dir)
    claims, silent = [], []
    for nb_dir in sorted(p for p in run_dir.iterdir() if p.is_dir() and p.name[:2].isdigit()):
        res = nb_dir / "results.json"
        found = json.loads(res.read_text()).get("claims", []) if res.exists() else []
        if not found:
            silent.append(nb_dir.name)
        for c in found:
            claims.append({**c, "notebook": c.get("notebook") or nb_dir.name})
    return claims, silent


@dataclass(frozen=True)
class Measurement:
    """One model's accuracy and MUI on one benchmark, as a notebook records them without testing a
    claim (notebook 00: its model, then each cell of its comparison)."""

    notebook: str
    model: str
    benchmark: str
    n: int
    accuracy: float
    ci_low: float
    ci_high: float
    chance: float | None
    parse_failures: int
    truncated: int
    mui: float
    """MUI, % of the model's MLP neurons."""

    @classmethod
    def from_record(cls, notebook: str, r: dict[str, Any]) -> Measurement | None:
        """From ``results.json``'s keys (:meth:`kit.subjects.Answers.summary` plus ``mui``);
        None when the record is not one."""
        if not all(k in r for k in ("model", "task", "accuracy", "accuracy_ci95", "mui")):
            return None
        lo, hi = r["accuracy_ci95"]
        return cls(
            notebook,
            str(r["model"]),
            str(r["task"]),
            int(r.get("n", 0)),
            float(r["accuracy"]),
            float(lo),
            float(hi),
            r.get("chance"),
            int(r.get("parse_failures", 0)),
            int(r.get("truncated", 0)),
            float(r["mui"]),
        )

    def cells(self) -> list[str]:
        return [
            self.notebook,
            self.model,
            self.benchmark,
            str(self.n),
            f"{self.accuracy:.3f}",
            f"[{self.ci_low:.3f}, {self.ci_high:.3f}]",
            "" if self.chance is None else f"{self.chance:.3f}",
            str(self.parse_failures),
            str(self.truncated),
            f"{self.mui:.2f}",
        ]


MEASUREMENT_HEAD = (
    "notebook",
    "model",
    "benchmark",
    "n",
    "accuracy",
    "95% interval",
    "chance",
    "parse failures",
    "truncated",
    "MUI %",
)
MEASUREMENTS_TITLE = "Measurements (accuracy and MUI; no claim tested)"


def measurements(run_dir: str | Path) -> list[Measurement]:
    """Every accuracy-and-MUI record of a run: a notebook's own (top level of its
    ``results.json``), then its ``comparison`` rows."""
    out = []
    for nb_dir in sorted(p for p in Path(run_dir).iterdir() if p.is_dir() and p.name[:2].isdigit()):
        res = nb_dir / "results.json"
        if not res.exists():
            continue
        record = json.loads(res.read_text())
        for r in [record, *record.get("comparison", [])]:
            m = Measurement.from_record(nb_dir.name, r) if isinstance(r, dict) else None
            if m is not None:
                out.append(m)
    return out


def _interval(c: dict) -> str:
    return "" if c.get("ci_low") is None else f"[{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]"


def _null(c: dict) -> str:
    if c.get("null_low") is not None:
        return f"{_fmt(c.get('null'))} [{_fmt(c['null_low'])}, {_fmt(c['null_high'])}]"
    return _fmt(c.get("null"))


def _paper(c: dict) -> str:
    v = c.get("paper_value")
    return "" if v is None else (_fmt(v) if isinstance(v, (int, float)) else str(v))


def _figure(run_dir: Path, c: dict) -> Path | None:
    if not c.get("figure"):
        return None
    p = run_dir / c["notebook"] / "figures" / f"{c['figure']}.png"
    return p if p.exists() else None


def _counts(claims: list[dict]) -> str:
    n = Counter(c["verdict"] for c in claims)
    return ", ".join(f"{n[v]} {v}" for v in ALL_VERDICTS if n[v])


def _kind(c: dict) -> str:
    return c.get("kind", "reproduction")


KIND_TITLES = {
    "reproduction": "Reproduction: the paper's claims tested on our own measurements",
    "re-analysis": "Re-analysis of the paper's printed tables (no model run here)",
    "set-up check": "Set-up checks: the world does what it was built to do (tests our "
    "construction, not the paper)",
    "audit": "Audits: the measurement-theory page's pass conditions (pass / fail)",
}


def headline(claims: list[dict], profile: str = "") -> str:
    """The report's first line: reproduction claims only, less those whose design cannot decide
    them (counted apart, their reasons in the tables); the other kinds counted apart. A real
    profile counts only what rests on a real LLM run here (:func:`kit.core.claims.headline_bases`):
    the claims it shares with the tiny profile are counted there, and named here by basis."""
    counted = headline_bases(profile)
    shared = Counter(
        basis(c, profile)
        for c in claims
        if _kind(c) == "reproduction" and basis(c, profile) not in counted
    )
    rep_all = [c for c in claims if _kind(c) == "reproduction" and basis(c, profile) in counted]
    rep = [c for c in rep_all if c["verdict"] != UNDECIDABLE]
    others = Counter(_kind(c) for c in claims if _kind(c) != "reproduction")
    on = "" if counted == BASES else f" resting on a {' or '.join(counted)} run here"
    line = f"{len(rep)} reproduction claims{on}: {_counts(rep) or 'none'}."
    if shared:
        line += (
            " Counted in the profile they share (not here): "
            + ", ".join(f"{shared[b]} resting on {b}" for b in BASES if shared[b])
            + "."
        )
    undecidable = len(rep_all) - len(rep)
    if undecidable:
        line += (
            f" Not counted: {undecidable} reproduction claims that cannot be decided here (their "
            "design cannot reach 95%, or a precondition fails; reasons in the tables)."
        )
    if others:
        line += (
            " Not counted here: " + ", ".join(f"{others[k]} {k}" for k in KINDS if others[k]) + "."
        )
    against = Counter(c.get("vs_paper") for c in rep_all if c.get("vs_paper"))
    if against:
        line += (
            " Against the paper's published effect: "
            + ", ".join(f"{against[v]} {v}" for v in VS_PAPER if against[v])
            + "."
        )
    fragile = [c for c in rep if c.get("fragile")]
    if fragile:
        line += (
            f" {len(fragile)} decided reproduction verdicts are fragile (margin under a "
            "tenth of the interval)."
        )
    flips = [c for c in claims if str(c.get("stability", "")).startswith("flips")]
    if flips:
        line += f" {len(flips)} verdicts flip under a stability rerun."
    return line


def _by_kind(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    return [
        (k, [c for c in rows if _kind(c) == k]) for k in KINDS if any(_kind(c) == k for c in rows)
    ]


def _margin(c: dict) -> str:
    m = c.get("margin")
    return "" if m is None else _fmt(m) + (" (fragile)" if c.get("fragile") else "")


def _header(run_dir: Path) -> tuple[str, list[dict]]:
    meta = run_dir / "run.json"
    info = json.loads(meta.read_text()) if meta.exists() else {}
    return info.get("profile", "?"), info.get("notebooks", [])


RULE = (
    "A claim is **supported** only when our 95% interval excludes its null on the predicted side "
    "(or lies inside the tolerance, for 'unchanged' claims; or holds the paper's value, for "
    "reproductions), **contradicted** when it excludes it on the other side, **inconclusive** "
    "otherwise; **cannot be decided here** when the design, read before its data, cannot reach "
    "95% (too few units or orders, an equivalence whose one changed answer already passes the "
    "tolerance) or a precondition fails (a leak not established), kept out of the headline; "
    "**not testable here** names what this machine cannot run. Where the paper prints an effect, "
    "**vs paper** reads our interval against it: replicated, smaller than the paper's, not "
    "replicated, or undetermined. Verdicts are computed by the notebooks, never typed."
)


def markdown(run_dir: str | Path) -> str:
    run_dir = Path(run_dir)
    claims, silent = collect(run_dir)
    profile, outcomes = _header(run_dir)
    lines = [
        f"# Reproduction report: `{run_dir.name}` (profile {profile})",
        "",
        headline(claims, str(profile)) if claims else "0 claims.",
        "",
        RULE,
        "",
    ]
    failed = [o["notebook"] for o in outcomes if o.get("status") == "failed"]
    if failed:
        lines += [f"**Failed notebooks** (their claims are missing): {', '.join(failed)}.", ""]
    if silent:
        lines += [f"Notebooks with no claims in this run: {', '.join(silent)}.", ""]
    measured = measurements(run_dir)
    if measured:
        lines += [
            f"## {MEASUREMENTS_TITLE}",
            "",
            "| " + " | ".join(MEASUREMENT_HEAD) + " |",
            "|" + "---|" * len(MEASUREMENT_HEAD),
            *("| " + " | ".join(m.cells()) + " |" for m in measured),
            "",
        ]
    head = [
        "notebook",
        "section",
        "claim",
        "paper",
        "ours",
        "95% interval",
        "resampled unit",
        "null",
        "null is",
        "margin",
        "verdict",
        "vs paper",
        "why",
        "rests on",
        "basis",
        "stability",
    ]
    for paper, title in PAPERS.items():
        rows = [c for c in claims if c["paper"] == paper]
        if not rows:
            continue
        lines += [f"## {title}", ""]
        for kind, group in _by_kind(rows):
            lines += [
                f"### {KIND_TITLES[kind]}",
                "",
                f"{_counts(group)}.",
                "",
                "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head),
            ]
            for c in group:
                fig = _figure(run_dir, c)
                text = c["statement"] + (
                    f" ([figure]({fig.relative_to(run_dir).as_posix()}))" if fig else ""
                )
                cells = [
                    c["notebook"],
                    c["section"],
                    text,
                    _paper(c),
                    _fmt(c.get("ours")),
                    _interval(c),
                    c.get("unit", ""),
                    _null(c),
                    c.get("null_how", ""),
                    _margin(c),
                    f"**{c['verdict']}**",
                    c.get("vs_paper", ""),
                    c.get("why", ""),
                    c.get("rests_on", ""),
                    basis(c, str(profile)),
                    c.get("stability", ""),
                ]
                lines.append(
                    "| "
                    + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells)
                    + " |"
                )
            lines.append("")
    return "\n".join(lines)


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}"
    "table{border-collapse:collapse;width:100%;\nmargin-bottom:2em;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top;text-align:left}\n"
    "th{background:#f3f3f3}"
    + "".join(f".{v.replace(' ', '-')}{{background:{c}}}" for v, c in VERDICT_COLOURS.items())
    + "\nimg{max-width:420px;display:block;margin-top:4px}details{margin-top:4px}"
)


def html_report(run_dir: str | Path) -> str:
    run_dir = Path(run_dir)
    claims, silent = collect(run_dir)
    profile, outcomes = _header(run_dir)
    esc = html.escape
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Reproduction report "
        f"{esc(run_dir.name)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Reproduction report: {esc(run_dir.name)} (profile {esc(str(profile))})</h1>",
        f"<p>{esc(headline(claims, str(profile)) if claims else '0 claims.')}</p>",
        f"<p>{esc(RULE).replace('**', '')}</p>",
    ]
    failed = [o["notebook"] for o in outcomes if o.get("status") == "failed"]
    if failed:
        out.append(
            f"<p><b>Failed notebooks</b> (their claims are missing): {esc(', '.join(failed))}.</p>"
        )
    if silent:
        out.append(f"<p>Notebooks with no claims in this run: {esc(', '.join(silent))}.</p>")
    measured = measurements(run_dir)
    if measured:
        out += [
            f"<h2>{esc(MEASUREMENTS_TITLE)}</h2><table><tr>",
            "".join(f"<th>{h}</th>" for h in MEASUREMENT_HEAD),
            "</tr>",
            *(
                "<tr>" + "".join(f"<td>{esc(x)}</td>" for x in m.cells()) + "</tr>"
                for m in measured
            ),
            "</table>",
        ]
    embedded: dict[Path, str] = {}
    head = (
        "notebook",
        "section",
        "claim",
        "paper",
        "ours",
        "95% interval",
        "resampled unit",
        "null",
        "null is",
        "margin",
        "verdict",
        "vs paper",
        "why",
        "rests on",
        "basis",
        "stability",
    )
    for paper, title in PAPERS.items():
        rows = [c for c in claims if c["paper"] == paper]
        if not rows:
            continue
        out.append(f"<h2>{esc(title)}</h2>")
        for kind, group in _by_kind(rows):
            out += [
                f"<h3>{esc(KIND_TITLES[kind])}</h3><p>{esc(_counts(group))}.</p><table><tr>",
                "".join(f"<th>{h}</th>" for h in head),
                "</tr>",
            ]
            for c in group:
                fig = _figure(run_dir, c)
                figure_html = ""
                if fig is not None:
                    if fig not in embedded:  # each figure once in full; later claims link to it
                        embedded[fig] = base64.b64encode(fig.read_bytes()).decode()
                    figure_html = (
                        f"<details><summary>figure {esc(c['figure'])}</summary>"
                        f"<img src='data:image/png;base64,{embedded[fig]}' "
                        f"alt='{esc(c['figure'])}'>"
                        "</details>"
                    )
                cls = c["verdict"].replace(" ", "-")
                cells = [
                    esc(c["notebook"]),
                    esc(c["section"]),
                    esc(c["statement"]) + figure_html,
                    esc(_paper(c)),
                    esc(_fmt(c.get("ours"))),
                    esc(_interval(c)),
                    esc(c.get("unit", "")),
                    esc(_null(c)),
                    esc(c.get("null_how", "")),
                    esc(_margin(c)),
                    f"<b>{esc(c['verdict'])}</b>",
                    esc(c.get("vs_paper", "")),
                    esc(c.get("why", "")),
                    esc(c.get("rests_on", "")),
                    esc(basis(c, str(profile))),
                    esc(c.get("stability", "")),
                ]
                out.append(
                    f"<tr class='{cls}'>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>"
                )
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def write_report(run_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.html`` into ``run_dir``; returns their paths."""
    run_dir = Path(run_dir)
    md, page = run_dir / "report.md", run_dir / "report.html"
    atomic_write_text(md, markdown(run_dir) + "\n")
    atomic_write_text(page, html_report(run_dir) + "\n")
    return md, page
