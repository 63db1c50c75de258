"""What a run needs from the machine, checked before any kernel starts: each problem one line
naming the field or variable to change.

A notebook that fails 40 s into its kernel on a read-only cache, ``device: cuda`` on a CPU-only
torch or a hub id that is not in the offline cache wastes the minutes before it, and says it in a
raw traceback. :func:`run_problems` asks first:

- the cache folder (``KIT_CACHE_DIR``) exists or can be created, is writable, and has at least
  :data:`MIN_FREE_CACHE_BYTES` free;
- the data folder, when ``KIT_DATA_DIR`` names one, exists;
- each config's ``device`` exists on this machine (:func:`device_problem`);
- the checks other layers register (:func:`register`): hub ids resolvable offline, ... They live
  with what they know about (this package imports no model or data code).

Layers named by a config are checked by the config itself (``requirements``), where the model's
shape is known from its config alone.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from kit.core.paths import PathError, cache_dir

if TYPE_CHECKING:
    from kit.core.params import BaseConfig

MIN_FREE_CACHE_BYTES = 1 << 30
"""Free space the cache folder must have when a run starts (1 GiB: a notebook's step and item
caches take megabytes; a fine-tune or a dequantised model takes up to a few hundred MB)."""

ConfigCheck = Callable[["BaseConfig"], list[str]]
"""A check of one resolved config: the problems found, each a line naming the field."""

_CHECKS: list[ConfigCheck] = []


def register(check: ConfigCheck) -> ConfigCheck:
    """Add ``check`` to the pre-flight checks of every config (idempotent; usable as a
    decorator)."""
    if check not in _CHECKS:
        _CHECKS.append(check)
    return check


def cache_problems(min_free: int = MIN_FREE_CACHE_BYTES) -> list[str]:
    """The cache folder can be created, written, and has ``min_free`` bytes free."""
    source = "KIT_CACHE_DIR" if os.environ.get("KIT_CACHE_DIR") else "cache folder (<repo>/.cache)"
    try:
        path = cache_dir()
    except PathError as e:
        return [f"{source}: {e}"]
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".kit-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        why = "read-only file system" if e.errno == errno.EROFS else (e.strerror or str(e))
        return [
            f"{source}: cache folder {path} is not writable ({why}); point KIT_CACHE_DIR at a "
            "writable folder"
        ]
    free = shutil.disk_usage(path).free
    if free < min_free:
        return [
            f"{source}: cache folder {path} has {free / 2**20:.0f} MiB free, a run needs at least "
            f"{min_free / 2**30:g} GiB (MIN_FREE_CACHE_BYTES); free some space or point "
            "KIT_CACHE_DIR elsewhere"
        ]
    return []


def data_problems() -> list[str]:
    """``KIT_DATA_DIR``, when set, names an existing folder (unset: each notebook that reads real
    data resolves ``../shared/data`` itself and says when it is missing)."""
    env = os.environ.get("KIT_DATA_DIR")
    if env and not Path(env).expanduser().is_dir():
        return [
            f"KIT_DATA_DIR: {env} is not a folder; set it to the folder holding the benchmark data "
            "(gsm8k/, mmlu/, ... and checksums.sha256) or unset it for ../shared/data"
        ]
    return []


def device_problem(device: str) -> str | None:
    """Why torch cannot use ``device`` here (None when it can): ``cuda`` on a torch built without
    CUDA or on a machine without a GPU, ``cuda:N`` beyond the GPUs there are, ``mps`` off Apple."""
    import torch

    kind, _, index = device.partition(":")
    if kind == "cuda":
        if not torch.cuda.is_available():
            why = (
                "this torch is built without CUDA"
                if torch.version.cuda is None
                else "no CUDA device is visible"
            )
            return f"field 'device': {device!r} but {why}; allowed values here: cpu"
        n = torch.cuda.device_count()
        if index and int(index) >= n:
            return (
                f"field 'device': {device!r} but there are {n} CUDA device(s); allowed values "
                f"here: cpu, cuda, cuda:0..cuda:{n - 1}"
            )
    if kind == "mps" and not torch.backends.mps.is_available():
        return f"field 'device': {device!r} but MPS is not available here; allowed values here: cpu"
    return None


def config_problems(cfg: BaseConfig) -> list[str]:
    """The device and every registered check of one resolved config."""
    out = [p for p in [device_problem(cfg.device)] if p]
    for check in _CHECKS:
        out += check(cfg)
    return out


def run_problems(configs: dict[str, BaseConfig] | Iterable[tuple[str, BaseConfig]]) -> list[str]:
    """Every problem of the machine (cache, data folder) and of each ``(notebook, config)``, each
    one line (a config's prefixed with its notebook); [] when the run can start."""
    items = configs.items() if isinstance(configs, dict) else configs
    out = cache_problems() + data_problems()
    for notebook, cfg in items:
        out += [f"{notebook}: {p}" for p in config_problems(cfg)]
    return out
