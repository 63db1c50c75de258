"""The typed, JSON-serialisable result every audit returns."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def jsonable(value: Any) -> Any:
    """Plain JSON for numpy / torch numbers and arrays; NaN and inf become ``None``."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    return value


class AuditInputs(BaseModel):
    """What an audit was computed on: enough to rerun it."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    """Model name (``zoo/base-m``, ``gpt2``...)."""
    hook: str | None = None
    """TransformerLens hook name the activations were read at (``blocks.1.hook_resid_post``)."""
    sae: list[str] = Field(default_factory=list)
    """SAE name(s) used, in the order the metric takes them."""
    task: str | None = None
    """Task / prompt set name."""
    n: int | None = None
    """Number of prompts (or token samples, as the metric's ``values`` say)."""
    seeds: list[int] = Field(default_factory=list)
    """Every seed that influenced the result."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Any other knob (thresholds, top-k, circuit heads...)."""

    @field_validator("extra")
    @classmethod
    def _plain(cls, v: dict[str, Any]) -> dict[str, Any]:
        return jsonable(v)


class AuditResult(BaseModel):
    """One metric's outcome: headline value, all quantities, pass condition and verdict."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    """Metric id of the seed's summary table (``M07`` ... ``M14``, ``EX1``..., ``MIB``)."""
    name: str
    """Human name (``Architecture Duality``)."""
    value: float | None
    """The headline number the pass condition is about (``None`` if undefined)."""
    values: dict[str, Any] = Field(default_factory=dict)
    """Every key quantity, JSON-plain (numbers, lists, nested dicts)."""
    pass_condition: str
    """The condition in words, with thresholds, e.g. ``architecture_agreement > 0.3``."""
    passed: bool
    """Whether the pass condition holds (diagnostics: ``True``, see ``diagnostic``)."""
    diagnostic: bool = False
    """Report-only metric: the seed defines no failing outcome."""
    inputs: AuditInputs = Field(default_factory=AuditInputs)
    """What it was computed on."""
    notes: str = ""
    """Caveats (e.g. why a sub-part was skipped)."""
    null: float | None = None
    """The same quantity on a null control (an instrument with nothing to measure); ``None``: none
    computed."""
    null_values: list[float] = Field(default_factory=list)
    """The null control's value per seed / permutation (``null`` is their mean)."""
    null_of: str = ""
    """Which quantity ``null`` is about: ``""`` = the headline ``value``, else a key of
    ``values``."""
    null_how: str = ""
    """How the null was made (``untrained copies (random_like), 3 seeds``...)."""
    null_passed: bool | None = None
    """Whether the null control meets the same pass condition (``True``: a pass says nothing)."""
    can_fail: bool = True
    """Whether both outcomes of the pass condition were reachable with these inputs (computed by
    each audit: a bound, a constant quantity, a degenerate comparison curve). Report-only audits:
    ``False``."""
    by_construction: str = ""
    """Which part of the verdict is decided by construction, and why (with the computed bound)."""

    @field_validator("values")
    @classmethod
    def _plain(cls, v: dict[str, Any]) -> dict[str, Any]:
        return jsonable(v)

    @field_validator("value", "null", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> float | None:
        v = jsonable(v)
        return None if v is None else float(v)

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @field_validator("null_values", mode="before")
    @classmethod
    def _plain_list(cls, v: Any) -> list:
        return [x for x in jsonable(list(v)) if x is not None]

    @model_validator(mode="after")
    def _report_only_cannot_fail(self) -> "AuditResult":
        if self.diagnostic and self.can_fail:
            self.can_fail = False
            self.by_construction = "report-only: the page defines no failing outcome" + (
                f"; {self.by_construction}" if self.by_construction else ""
            )
        return self

    def with_null(
        self, values, how: str, passed: bool | None = None, of: str = ""
    ) -> "AuditResult":
        """Attach a null control (``values``: one number per seed / permutation) and return
        ``self``."""
        vals = [float(x) for x in jsonable(list(values)) if x is not None]
        self.null_values, self.null_how, self.null_passed, self.null_of = vals, how, passed, of
        self.null = float(np.mean(vals)) if vals else None
        return self

    def decided(self, why: str) -> "AuditResult":
        """Mark the verdict as decided by construction (``why`` names the computed bound)."""
        self.can_fail, self.by_construction = False, why
        return self

    def verdict(self) -> str:
        """``pass`` / ``FAIL`` / ``report`` (diagnostics)."""
        return "report" if self.diagnostic else ("pass" if self.passed else "FAIL")


def fail_check(r: AuditResult) -> str:
    """The computed answer to "could this verdict have failed here?", from what the audit computed:

    - ``report-only``: a diagnostic (the page defines no failing outcome);
    - ``no``: decided by construction (a bound, a constant quantity, a saturated curve:
      ``by_construction``);
    - ``yes``: the audit failed, or its null control (an instrument with nothing to measure) fails
      the same pass condition, so a fail is reachable with these inputs;
    - ``uninformative pass``: it passed and its null control passes the same condition too;
    - ``unchecked``: no null verdict was computed.
    """
    if r.diagnostic:
        return "report-only" + (
            f" ({r.by_construction})"
            if r.by_construction and not r.by_construction.startswith("report-only")
            else ""
        )
    if not r.can_fail:
        return f"no: {r.by_construction}"
    null = (
        ""
        if r.null is None
        else f" (null {'of ' + r.null_of + ' ' if r.null_of else ''}{r.null:.3g})"
    )
    if not r.passed:
        return "yes: the audit fails" + (" (its null control passes)" if r.null_passed else "")
    if r.null_passed is False:
        return f"yes: the null control fails the same condition{null}"
    if r.null_passed:
        return (
            f"uninformative pass: the null control ({r.null_how}) passes the same condition "
            f"too{null}"
        )
    return "unchecked: no null verdict computed"


def not_run(
    metric: str, name: str, reason: str, pass_condition: str, inputs: AuditInputs
) -> AuditResult:
    """The result of an audit the config cannot run (:meth:`Config.not_testable`: MIB without
    edge patching, M14 without a safety contrast): no value, report-only, with the reason
    (``values['not_run']``, read by the claims as why it is not testable)."""
    return AuditResult(
        metric=metric,
        name=name,
        value=None,
        values={"not_run": reason, "cmd": None},
        pass_condition=pass_condition,
        passed=False,
        diagnostic=True,
        inputs=inputs,
        notes=f"not run: {reason}",
    )


def dumps(results: list[AuditResult]) -> str:
    """JSON text of a list of results (what ``audits.json`` holds)."""
    return json.dumps([r.model_dump(mode="json") for r in results], indent=2)
