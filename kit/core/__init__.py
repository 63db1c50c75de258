"""The small core every notebook uses: parameters (``params``), a notebook's start and its
results (``notebook``, ``figures``, ``findings``), the papermill runner (``runner``; one notebook's
``execution``, the figures' ``export``), jobs and the engines that run sweeps of them (``jobs``),
where files live and how they are written atomically (``paths``), the errors users see
(``errors``), NaN/inf guards (``checks``), the bench harness (``bench``), the claims ledger
(``claims``), its intervals and nulls (``stats``) and the run's report (``report``)."""

from kit.core.lazy import lazy_submodules

__getattr__, __dir__ = lazy_submodules(
    __name__,
    [
        "bench",
        "checks",
        "claims",
        "errors",
        "execution",
        "export",
        "figures",
        "findings",
        "jobs",
        "notebook",
        "params",
        "paths",
        "report",
        "runner",
        "stats",
    ],
    globals(),
)
