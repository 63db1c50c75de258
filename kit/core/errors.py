"""The errors users see, in one place to catch or look up. Each names the field or file at fault and
what is allowed; they live beside the code that raises them and are re-exported here.

- :class:`ParamsError`: a params file, profile, field, type or value is wrong (``kit.core.params``);
- :class:`DataError`: the data directory is missing or fails its checksums (``kit.core.paths``);
- :class:`PathError`: an output or cache path cannot be written (``kit.core.paths``);
- :class:`NonFiniteError`: NaN or inf in activations, scores or inputs (``kit.core.checks``);

and, not imported here because the core imports no other kit package:

- ``kit.models.UnknownModelError``: a model name or path that cannot be loaded
  (``kit.models.load``);
- ``kit.models.encoders.UnknownSiteError``: an encoder site that is not a hook;
- ``kit.world.WorldNotBuilt``: the tiny world is not built yet.
"""

from kit.core.checks import NonFiniteError
from kit.core.params import ParamsError
from kit.core.paths import DataError, PathError

__all__ = [
    "DataError",
    "NonFiniteError",
    "ParamsError",
    "PathError",
]
