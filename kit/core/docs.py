"""``python -m kit docs``: the generated pages of ``docs/`` (results, timings) and the run records
they are generated from.

A run directory is not committed (``runs/`` holds executed notebooks and every figure), so
``docs record RUN_DIR`` writes a compact digest of it to ``docs/records/<profile>.json``: the run's
facts (when, machine, commit, load), each notebook's time and every claim's numbers and verdict.
``docs build`` writes ``docs/results.md`` (each claim in the tiny world, on real models and in the
paper, side by side) and ``docs/timings.md`` (the recorded times, plus the earlier measurements
transcribed in ``docs/records/measurements.json``) from those records alone, so a test can rebuild
them and compare byte for byte (``docs build --check``). Nothing on these pages is typed by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from kit.core.claims import ALL_VERDICTS, KINDS, _fmt
from kit.core.paths import REPO_ROOT, atomic_write_text
from kit.core.report import PAPERS, collect

DOCS_DIR = REPO_ROOT / "docs"
RECORDS = ("tiny", "real", "smoke")
"""The profiles whose records the pages read: results from ``tiny`` and ``real``, times from all."""
RESULT_PROFILES = {"tiny": "tiny world", "real": "real models"}


@dataclass
class ClaimRow:
    """One claim of a run as the results page shows it (part of :class:`kit.core.claims.Claim`)."""

    notebook: str
    paper: str
    section: str
    id: str
    kind: str
    statement: str
    paper_value: Any
    """What the paper prints (number or text), or ``None``."""
    ours: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str
    why: str = ""
    """The verdict's reason; the page shows it where the claim is not testable here."""


@dataclass
class NotebookTime:
    notebook: str
    status: str
    seconds: float


@dataclass
class RunRecord:
    """The digest of one run directory that the generated pages read."""

    profile: str
    run: str
    """The run directory's name (its UTC start stamp)."""
    started: str
    """``YYYY-MM-DD HH:MM UTC``."""
    commit: str
    """The commit the run ran on (``+changes``: with uncommitted edits), ``""`` if not recorded."""
    machine: str
    load: str
    """How busy the machine was: the recorded load averages, or a note such as ``alone``."""
    parallel: int
    wall_s: float | None
    status: str
    notebooks: list[NotebookTime]
    claims: list[ClaimRow] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict) -> "RunRecord":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(
                f"run record: unknown field(s) {sorted(unknown)}; allowed: {sorted(known)}"
            )
        return cls(
            **{
                **d,
                "notebooks": [NotebookTime(**n) for n in d["notebooks"]],
                "claims": [ClaimRow(**c) for c in d.get("claims", [])],
            }
        )


@dataclass
class Measurement:
    """A time measured by hand before runs recorded their machine (records/measurements.json)."""

    what: str
    date: str
    machine: str
    commit: str
    load: str
    """``alone`` or ``shared`` (other work on the cores: the time is an upper bound)."""
    minutes: float
    detail: str = ""


@dataclass
class Floor:
    """One step's floor in one numerical environment, transcribed from ``python -m kit bench
    pinned`` (records/floors.json): its matrix-product work, the rate it ran at, and that rate's
    share of the same environment's GEMM rate."""

    step: str
    """What one step computes, e.g. a tiny-world training step."""
    environment: str
    """``pinned`` or ``native``."""
    date: str
    machine: str
    commit: str
    load: str
    """``alone`` or ``shared``."""
    gflop: float
    """Matrix-product work of one step (forward and backward), GFLOP."""
    seconds: float
    """CPU seconds of one step."""
    gemm_gflops: float
    """The environment's GEMM rate on the same machine, GFLOP/s (the floor's rate)."""

    @property
    def rate(self) -> float:
        """GFLOP/s the step ran at."""
        return self.gflop / self.seconds

    @property
    def efficiency(self) -> float:
        """The step's rate over the GEMM rate: 1.0 would be a step spent only in GEMMs."""
        return self.rate / self.gemm_gflops


def _started(run_name: str) -> str:
    try:
        return datetime.strptime(run_name[:15], "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return ""


def _load_text(info: dict) -> str:
    if info.get("load_start") is None:
        return ""
    top = info.get("load_max") or info["load_start"]
    return f"load {info['load_start']:.1f}-{top:.1f} on {info.get('cores', '?')} cores"


def record_run(
    run_dir: str | Path,
    *,
    commit: str = "",
    machine: str = "",
    load: str = "",
    with_claims: bool = True,
) -> RunRecord:
    """The digest of ``run_dir``. ``commit``, ``machine`` and ``load`` fill in what an older
    ``run.json`` did not record (what it records wins); a run that is not ``ok`` is refused."""
    run_dir = Path(run_dir).resolve()
    meta = run_dir / "run.json"
    if not meta.exists():
        raise FileNotFoundError(f"{meta} not found: pass a run directory runs/<profile>/<stamp>")
    info = json.loads(meta.read_text())
    if info.get("status") != "ok":
        raise ValueError(
            f"{run_dir}: status {info.get('status')!r}; only a complete run (status 'ok') "
            "is recorded"
        )
    claims = []
    if with_claims:
        for c in collect(run_dir)[0]:
            verdict = str(c["verdict"])
            claims.append(
                ClaimRow(
                    notebook=str(c["notebook"]),
                    paper=str(c["paper"]),
                    section=str(c.get("section") or ""),
                    id=str(c["id"]),
                    kind=str(c.get("kind") or "reproduction"),
                    statement=str(c.get("statement") or ""),
                    paper_value=c.get("paper_value"),
                    ours=c.get("ours"),
                    ci_low=c.get("ci_low"),
                    ci_high=c.get("ci_high"),
                    verdict=verdict,
                    # the reason is shown only where there is no number to show
                    why=str(c.get("why") or "") if verdict == "not testable here" else "",
                )
            )
    return RunRecord(
        profile=info["profile"],
        run=run_dir.name,
        started=info.get("started") or _started(run_dir.name),
        commit=info.get("commit") or commit,
        machine=info.get("machine") or machine,
        load=_load_text(info) or load,
        parallel=int(info.get("parallel", 1)),
        wall_s=info.get("wall_s"),
        status=info["status"],
        notebooks=[
            NotebookTime(n["notebook"], n["status"], round(float(n["seconds"]), 1))
            for n in info["notebooks"]
        ],
        claims=claims,
    )


def write_record(rec: RunRecord, records_dir: Path) -> Path:
    path = records_dir / f"{rec.profile}.json"
    records_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(asdict(rec), indent=1, ensure_ascii=False) + "\n")
    return path


def read_records(records_dir: Path) -> dict[str, RunRecord]:
    out = {}
    for profile in RECORDS:
        p = records_dir / f"{profile}.json"
        if p.exists():
            out[profile] = RunRecord.from_dict(json.loads(p.read_text()))
    return out


def read_measurements(records_dir: Path) -> list[Measurement]:
    p = records_dir / "measurements.json"
    return [Measurement(**m) for m in json.loads(p.read_text())] if p.exists() else []


# ----------------------------------------------------------------------------- results.md


def read_floors(records_dir: Path) -> list[Floor]:
    p = records_dir / "floors.json"
    return [Floor(**f) for f in json.loads(p.read_text())] if p.exists() else []


def _cell(text: Any) -> str:
    return str(text).replace("\n", " ").replace("|", "\\|").strip()


def _paper_value(v: Any) -> str:
    if v is None:
        return ""
    return _fmt(v) if isinstance(v, (int, float)) else _cell(v)


def _ours(c: ClaimRow | None) -> str:
    if c is None:
        return ""
    if c.verdict == "not testable here":
        return f"not testable here: {_cell(c.why)}" if c.why else "not testable here"
    value = _fmt(c.ours)
    if c.ci_low is not None and c.ci_high is not None:
        value += f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]"
    return f"**{c.verdict}**: {value}"


def _counts(claims: list[ClaimRow]) -> str:
    lines = []
    for kind in KINDS:
        n = Counter(c.verdict for c in claims if c.kind == kind)
        if n:
            verdicts = ", ".join(f"{n[v]} {v}" for v in ALL_VERDICTS if n[v])
            lines.append(f"{sum(n.values())} {kind}: {verdicts}")
    return "; ".join(lines) or "no claims"


def _run_line(rec: RunRecord) -> str:
    facts = [f"run `{rec.run}`", rec.started]
    facts += [f"commit `{rec.commit}`"] if rec.commit else ["commit not recorded"]
    return ", ".join(facts)


def results_page(records: dict[str, RunRecord]) -> str:
    shown = [p for p in RESULT_PROFILES if p in records]
    out = [
        "# Results: every claim, in the tiny world, on real models and in the paper",
        "",
        "<!-- generated by `python -m kit docs build` from docs/records/; do not edit -->",
        "",
        "Each row is one claim a notebook tests. A verdict is computed by the notebook",
        "from our 95% interval and its null (the rule and every null are in each run's",
        "`report.md`): **supported** when the interval excludes the null on the predicted",
        "side, **contradicted** when it excludes it on the other side, **inconclusive**",
        "otherwise. Kinds: `reproduction` (the paper's claim on models run here),",
        "`re-analysis` (the paper's printed tables recomputed), `set-up check` (the tiny",
        "world does what it was built to do), `audit` (seed 003's pass conditions).",
        "",
    ]
    for profile, label in RESULT_PROFILES.items():
        rec = records.get(profile)
        if rec is None:
            out.append(
                f"- **{label}**: no `{profile}` run is recorded (run `make "
                f"{'real' if profile == 'real' else 'run'}`, then `python -m kit docs record "
                f"runs/{profile}/latest` and `python -m kit docs build`)."
            )
        else:
            out.append(f"- **{label}** ({_run_line(rec)}): {_counts(rec.claims)}.")
    out.append("")
    if not shown:
        return "\n".join(out)
    by_key: dict[tuple[str, str], dict[str, ClaimRow]] = {}
    order: list[tuple[str, str]] = []
    for profile in shown:
        for c in records[profile].claims:
            key = (c.notebook, c.id)
            if key not in by_key:
                by_key[key] = {}
                order.append(key)
            by_key[key][profile] = c
    papers: list[str] = []
    for key in order:
        paper = next(iter(by_key[key].values())).paper
        if paper not in papers:
            papers.append(paper)
    header = ["notebook", "section", "kind", "claim", "paper"] + [RESULT_PROFILES[p] for p in shown]
    for paper in papers:
        out += [f"## {PAPERS.get(paper, f'seed {paper}')}", ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        for key in order:
            rows = by_key[key]
            first = next(iter(rows.values()))
            if first.paper != paper:
                continue
            paper_value = next(
                (_paper_value(c.paper_value) for c in rows.values() if c.paper_value is not None),
                "",
            )
            cells = [
                first.notebook,
                _cell(first.section),
                first.kind,
                _cell(first.statement),
                paper_value,
            ] + [_ours(rows.get(p)) for p in shown]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- timings.md


def _minutes(seconds: float | None) -> str:
    return "not recorded" if seconds is None else f"{seconds / 60:.1f}"


def floors_section(floors: Sequence[Floor]) -> list[str]:
    """The floor table: each step's FLOPs, rate and efficiency, per environment."""
    if not floors:
        return []
    out = [
        "## Floors: FLOPs, rate and efficiency per step",
        "",
        "Transcribed from `python -m kit bench pinned` (docs/records/floors.json). GFLOP: the",
        "step's matrix products, forward and backward (`torch.utils.flop_counter`); rate: GFLOP",
        "per CPU second of the step; efficiency: that rate over the same environment's GEMM rate",
        "(1.00 would be a step spent only in matrix products at full rate).",
        "",
        "| step | environment | GFLOP | CPU s | GFLOP/s | GEMM GFLOP/s | efficiency "
        "| date | machine | commit | alone / shared |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in floors:
        cells = [
            f.step,
            f.environment,
            f"{f.gflop:.2f}",
            f"{f.seconds:.3f}",
            f"{f.rate:.1f}",
            f"{f.gemm_gflops:.1f}",
            f"{f.efficiency:.2f}",
            f.date,
            f.machine,
            f"`{f.commit}`" if f.commit else "",
            f.load,
        ]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return out + [""]


def timings_page(
    records: dict[str, RunRecord], measurements: list[Measurement], floors: Sequence[Floor] = ()
) -> str:
    out = [
        "# Timings",
        "",
        "<!-- generated by `python -m kit docs build` from docs/records/; do not edit -->",
        "",
        "Wall-clock minutes. A time measured while other work shared the cores is an upper bound.",
        "",
        "## Runs recorded by the runner",
        "",
    ]
    if not records:
        out += ["No run is recorded in docs/records/.", ""]
    else:
        recs = list(records.values())
        out += ["| | " + " | ".join(f"`{r.profile}`" for r in recs) + " |"]
        out += ["|---|" + "---|" * len(recs)]
        facts = [
            ("run", lambda r: f"`{r.run}`"),
            ("started", lambda r: r.started),
            ("machine", lambda r: _cell(r.machine) or "not recorded"),
            ("commit", lambda r: f"`{r.commit}`" if r.commit else "not recorded"),
            ("load", lambda r: _cell(r.load) or "not recorded"),
            ("notebooks at once", lambda r: str(r.parallel)),
            ("wall, whole run", lambda r: _minutes(r.wall_s)),
            ("sum of the notebooks", lambda r: _minutes(sum(n.seconds for n in r.notebooks))),
        ]
        for name, get in facts:
            out.append(f"| {name} | " + " | ".join(get(r) for r in recs) + " |")
        names = sorted({n.notebook for r in recs for n in r.notebooks})
        for nb in names:
            cells = []
            for r in recs:
                t = next((n for n in r.notebooks if n.notebook == nb), None)
                cells.append(
                    ""
                    if t is None
                    else _minutes(t.seconds) + ("" if t.status == "ok" else f" ({t.status})")
                )
            out.append(f"| {nb} | " + " | ".join(cells) + " |")
        out += [
            "",
            "A later run reads what the first one built (the world, fine-tunes, SAEs, answers,",
            "audits) from the content-keyed caches; the times above are of whatever the recorded",
            "run had to do.",
            "",
        ]
    out += floors_section(floors)
    out += ["## Earlier measurements", ""]
    if not measurements:
        out += ["None transcribed.", ""]
        return "\n".join(out)
    out += [
        "Measured before runs recorded their machine, transcribed from the project's log",
        "(docs/records/measurements.json).",
        "",
        "| what | date | machine | commit | alone / shared | minutes | detail |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in measurements:
        cells = [
            m.what,
            m.date,
            m.machine,
            f"`{m.commit}`" if m.commit else "",
            m.load,
            f"{m.minutes:.1f}",
            m.detail,
        ]
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    out.append("")
    return "\n".join(out)


PAGES = {
    "results.md": lambda recs, ms, floors: results_page(recs),
    "timings.md": timings_page,
}


def build(docs_dir: Path = DOCS_DIR, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) the generated pages; the names of pages that differ."""
    records_dir = docs_dir / "records"
    records, measurements = read_records(records_dir), read_measurements(records_dir)
    floors = read_floors(records_dir)
    stale = []
    for name, make in PAGES.items():
        text = make(records, measurements, floors)
        path = docs_dir / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not check:
            atomic_write_text(path, text)
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m kit docs", description=(__doc__ or "").split("\n\n")[0]
    )
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="digest a run directory into docs/records/<profile>.json")
    rec.add_argument("run_dir", help="runs/<profile>/<stamp> (or runs/<profile>/latest)")
    rec.add_argument("--commit", default="", help="the commit, where run.json does not record it")
    rec.add_argument("--machine", default="", help="the machine, where run.json does not record it")
    rec.add_argument("--load", default="", help="alone / shared, where run.json records no load")
    rec.add_argument("--timings-only", action="store_true", help="leave the claims out")
    rec.add_argument("--docs", default=str(DOCS_DIR), help="the docs folder (default: docs/)")
    bld = sub.add_parser("build", help="write docs/results.md and docs/timings.md from the records")
    bld.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page is stale"
    )
    bld.add_argument("--docs", default=str(DOCS_DIR), help="the docs folder (default: docs/)")
    args = ap.parse_args(argv)
    docs_dir = Path(args.docs)
    if args.command == "record":
        try:
            r = record_run(
                args.run_dir,
                commit=args.commit,
                machine=args.machine,
                load=args.load,
                with_claims=not args.timings_only,
            )
        except (FileNotFoundError, ValueError) as e:
            print(e, file=sys.stderr)
            return 2
        print(f"wrote {write_record(r, docs_dir / 'records')} ({len(r.claims)} claims)")
        return 0
    stale = build(docs_dir, check=args.check)
    if args.check:
        if stale:
            print(f"stale: {', '.join(stale)} (run `python -m kit docs build`)", file=sys.stderr)
        return 1 if stale else 0
    print(f"wrote {', '.join(stale) or 'nothing (up to date)'}")
    return 0
