"""The small core every notebook uses: parameters (``params``), a notebook's start and its
results (``notebook``, ``figures``, ``findings``), the papermill runner (``runner``; one notebook's
``execution``, the figures' ``export``), jobs and the engines that run sweeps of them (``jobs``),
where files live and how they are written atomically (``paths``), the errors users see
(``errors``), NaN/inf guards (``checks``), the bench harness (``bench``), the claims ledger
(``claims``), its intervals and nulls (``stats``), the run's report (``report``), where a run ran
(``machine``) and the generated pages of docs/ (``docs``)."""

from kit.core.lazy import lazy_submodules

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "bench",
        "checks",
        "claims",
        "docs",
        "errors",
        "execution",
        "export",
        "figures",
        "findings",
        "jobs",
        "machine",
        "notebook",
        "params",
        "paths",
        "report",
        "runner",
        "stats",
    ],
    globals(),
)
