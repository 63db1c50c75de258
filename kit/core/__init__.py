"""The small core every notebook uses: parameters (``params``), a notebook's start and its
results (``notebook``, ``figures``), the papermill runner (``runner``), where files live and how
they are written atomically (``paths``), the errors users see (``errors``), NaN/inf guards
(``checks``), the bench harness (``bench``)."""

from kit.core.lazy import lazy_submodules

__getattr__, __dir__ = lazy_submodules(__name__, ["bench", "checks", "errors", "figures", "notebook", "params", "paths", "runner"], globals())
