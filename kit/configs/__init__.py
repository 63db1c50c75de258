"""One config class per notebook (``Config``), loaded by ``kit.core.params.load_params``."""
