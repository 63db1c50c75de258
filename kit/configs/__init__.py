"""One config class per notebook (``Config``), loaded by ``kit.params.load_params``."""
