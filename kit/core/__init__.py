"""The small core every notebook uses: parameters (``params``), a notebook's start and its
results (``notebook``, ``figures``, ``findings``), the papermill runner (``runner``; one notebook's
``execution``, the figures' ``export``), jobs and the engines that run sweeps of them (``jobs``),
where files live and how they are written atomically (``paths``), the errors users see
(``errors``), NaN/inf guards (``checks``), the bench harness (``bench``), the claims ledger
(``claims``), its intervals and nulls (``stats``), the run's report (``report``), where a run ran
(``machine``), the generated pages of docs/ (``docs``) and the pinned numerical environment of
worlds and runs (``pinned``, with its CPU ``kernels``).

It imports no other kit package: where it needs to know the notebooks' configs or the names they
may mention, the package that knows registers them (:func:`kit.core.params.register_configs`)."""

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
        "kernels",
        "machine",
        "notebook",
        "params",
        "paths",
        "pinned",
        "report",
        "runner",
        "stats",
    ],
    globals(),
)
