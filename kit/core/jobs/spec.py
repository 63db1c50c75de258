"""What a job is, how it is named and called, and what a sweep reports.

A :class:`Job` is a top-level function named by an importable path (``"module:function"``) and
JSON-able keyword arguments. Its id is a content hash of the two, so the same work gets the same id
wherever it is built, and a sweep runs each id once. Every engine calls the function the same way,
through :func:`call_job`: with the arguments decoded from their canonical JSON (so a tuple arrives
as a list on every engine, never only on some), and with its return value checked to be JSON-able.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

ERROR_LINES = 12
"""How many last lines of a job's traceback a failure keeps."""


class JobsFailed(RuntimeError):
    """Raised by ``run_jobs`` after every job that could run has run, when some failed or were
    skipped. ``report`` is the whole :class:`JobsReport`; the message names each failed job with its
    function, its arguments and the last lines of its error."""

    def __init__(self, report: JobsReport):
        self.report = report
        super().__init__(report.describe_failures())


@dataclass(frozen=True, init=False)
class Job:
    """One unit of work: ``fn(**kwargs)``, run once per sweep, in any process of any engine.

    - ``fn``: ``"package.module:function"`` (a top-level function; a callable becomes its path);
    - ``kwargs``: JSON-able keyword arguments (kept as canonical JSON; :attr:`kwargs` decodes them);
    - ``id``: the content hash of ``fn`` and the canonical arguments unless given;
    - ``after``: ids (or :class:`Job` objects) of jobs of the same sweep that must finish first;
    - ``num_cpus`` (>= 1), ``num_gpus`` (>= 0; fractions share a GPU under Ray): what it occupies;
    - ``pinned``: run in a process started with ``kit.core.pinned.PINNED_ENV`` (same bits on every
      machine of one numerical platform), as the world's training does.

    The function writes its work into the content-addressed caches (atomically, ``kit.core.paths``)
    and may return a small JSON-able value. It must be deterministic in its arguments (seed every
    RNG it uses): the engine only schedules, so every engine gives the same results. It should
    return early when its cache entry exists, so that rerunning an interrupted sweep redoes only
    what did not finish; and its arguments should name its output, so that two jobs with different
    ids never write the same file (identical jobs are run once).
    """

    fn: str
    args_json: str = "{}"
    id: str = ""
    after: tuple[str, ...] = ()
    num_cpus: int = 1
    num_gpus: float = 0
    pinned: bool = False

    def __init__(
        self,
        fn: str | Callable[..., Any],
        kwargs: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        after: Iterable[str | Job] = (),
        num_cpus: int = 1,
        num_gpus: float = 0,
        pinned: bool = False,
    ):
        path = function_path(fn)
        args_json = canonical_json(dict(kwargs or {}), f"job {path}: its arguments")
        if isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1:
            raise ValueError(f"job {path}: num_cpus={num_cpus!r}; allowed values: an int >= 1")
        if (
            isinstance(num_gpus, bool)
            or not isinstance(num_gpus, (int, float))
            or not math.isfinite(num_gpus)
            or num_gpus < 0
        ):
            raise ValueError(f"job {path}: num_gpus={num_gpus!r}; allowed values: a number >= 0")
        deps = tuple(d.id if isinstance(d, Job) else d for d in after)
        if not all(isinstance(d, str) and d for d in deps):
            raise ValueError(
                f"job {path}: after={list(after)!r}; allowed values: job ids (str) or Job objects"
            )
        set_ = object.__setattr__  # frozen: set once here
        set_(self, "fn", path)
        set_(self, "args_json", args_json)
        set_(self, "id", id if id is not None else job_id(path, args_json))
        set_(self, "after", deps)
        set_(self, "num_cpus", num_cpus)
        set_(self, "num_gpus", num_gpus)
        set_(self, "pinned", bool(pinned))
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(
                f"job {path}: id={id!r}; allowed values: a non-empty str, or None "
                "(the content hash)"
            )

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments as the function receives them (decoded from canonical JSON)."""
        return json.loads(self.args_json)

    def describe(self) -> str:
        """``module:function(a=1, b='x')``, as failures and progress name a job."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.fn}({args})"


def canonical_json(value: Any, what: str = "value") -> str:
    """``value`` as canonical JSON (sorted keys, no spaces, no NaN); if it is not JSON-able, the
    error names ``what``."""
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{what} must be JSON-able (str, int, float, bool, None, lists and dicts "
            f"with str keys): {e}"
        ) from None


def job_id(fn: str, args_json: str) -> str:
    """The content hash of a function path and its canonical JSON arguments (20 hex digits)."""
    return hashlib.sha256(f"{fn}\n{args_json}".encode()).hexdigest()[:20]


def function_path(fn: str | Callable[..., Any]) -> str:
    """``"module:function"`` for a top-level function or such a string (checked for form only)."""
    if callable(fn) and not isinstance(fn, str):
        module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        if not module or module == "__main__" or not name.isidentifier():
            raise ValueError(
                f"{fn!r} is not a top-level function of an importable module (a "
                "job's function must be importable by name in another process: define "
                "it in a module, not in __main__, a notebook or another function)"
            )
        return f"{module}:{name}"
    if not isinstance(fn, str):
        raise ValueError(
            f"job function {fn!r}; allowed values: 'package.module:function' or a "
            "top-level function"
        )
    module, sep, name = fn.partition(":")
    if not sep or not name.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
        raise ValueError(
            f"job function {fn!r}; allowed values: 'package.module:function' (a top-level function)"
        )
    return fn


def resolve(fn: str) -> Callable[..., Any]:
    """Import ``"module:function"`` and return the function; errors say which part is missing."""
    module_name, _, name = fn.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(
            f"job function {fn!r}: module {module_name!r} cannot be imported ({e})"
        ) from None
    target = getattr(module, name, None)
    if not callable(target):
        raise ValueError(f"job function {fn!r}: module {module_name!r} has no function {name!r}")
    return target


def call_job(fn: str, args_json: str) -> dict[str, Any]:
    """Run one job here; every engine calls this. Never raises for the job's own errors.

    Returns ``{"ok": True, "value": <JSON-able>}`` or ``{"ok": False, "error": <last lines of the
    traceback>}``; a return value that is not JSON-able is an error of the job.
    """
    try:
        value = resolve(fn)(**json.loads(args_json))
        return {"ok": True, "value": json.loads(canonical_json(value, f"the return value of {fn}"))}
    except (Exception, SystemExit) as e:  # the job's error (sys.exit too); Ctrl-C propagates
        # from the job's own frame on: the line of call_job above says nothing
        assert e.__traceback__ is not None  # set on every caught exception
        lines = traceback.format_exception(type(e), e, e.__traceback__.tb_next)
        return {"ok": False, "error": last_lines("".join(lines))}


def last_lines(text: str, n: int = ERROR_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


@dataclass(frozen=True)
class JobFailure:
    """A job that did not finish: ``kind`` is ``raised`` (its function raised), ``died`` (its
    process died on every attempt: killed, out of memory, a crash) or ``skipped`` (a dependency
    failed or was skipped)."""

    job: Job
    kind: str
    error: str
    """The last lines of the traceback, how the process died, or which dependency failed."""

    def describe(self) -> str:
        text = "\n    ".join(self.error.splitlines())
        return f"- {self.kind}: job {self.job.id} = {self.job.describe()}\n    {text}"


@dataclass
class JobsReport:
    """What ``run_jobs`` did. Ids are :attr:`Job.id`; each job is in exactly one of ``results``,
    ``failed`` and ``skipped``."""

    engine: str
    jobs: dict[str, Job]
    """Every job of the sweep, deduplicated, in the order given."""
    results: dict[str, Any] = field(default_factory=dict)
    """Return values (decoded JSON) of the jobs that finished."""
    failed: dict[str, JobFailure] = field(default_factory=dict)
    """Jobs that raised or whose process died on every attempt."""
    skipped: dict[str, JobFailure] = field(default_factory=dict)
    """Jobs not run because a dependency failed or was skipped (the error names it)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall seconds of each finished or failed job, from submission to its result (queueing included
    under Ray), on the last attempt for the local engine."""
    attempts: dict[str, int] = field(default_factory=dict)
    """Processes started per job: by the scheduler (local and inline engines), or as Ray counts
    its task's attempts (Ray retries a task whose worker died by itself, within one submission)."""
    wall_seconds: float = 0.0
    """The whole sweep, from the first submission to the last result."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped

    def first_cause(self) -> str:
        """The first failed job's error in one line: its exception's type and message (the last
        line of its traceback), or how its process died; "" when none failed."""
        for f in self.failed.values():
            lines = [ln.strip() for ln in f.error.splitlines() if ln.strip()]
            if lines:
                return lines[-1] if f.kind == "raised" else " ".join(lines)
        return ""

    def describe_failures(self) -> str:
        """The first line says what failed and the first cause (a one-line error keeps it); then
        each failed or skipped job with its arguments and error."""
        cause = self.first_cause()
        lines = [
            f"{len(self.failed)} of {len(self.jobs)} job(s) failed"
            + (f" (first: {cause})" if cause else "")
            + f" and {len(self.skipped)} were skipped (engine {self.engine}):"
        ]
        lines += [f.describe() for f in [*self.failed.values(), *self.skipped.values()]]
        return "\n".join(lines)
