"""Do the audits' verdicts hold across models? Notebook 06's SAE audits on a second model
(``second_model``) set beside the audited model's, verdict by verdict.

The second model's audits give claims by the same rule as the first's
(:func:`kit.audits.claims.study_claims`), recorded under ids prefixed by the model
(:func:`second_model_claims`); :func:`compare_verdicts` pairs each audit's verdict on the two models
(matched by claim id) and counts those that agree (:class:`CrossModelVerdicts`). Two verdicts agree
when they are the same word; agreement on "inconclusive" says little, so the count of audits
*decided* (pass or fail) on both models, and of those that agree, is kept beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from kit.core.claims import Claim, decided


@dataclass(frozen=True)
class VerdictPair:
    """One audit's claim (``id``, e.g. ``M07.vs_null``) and its verdict on each model."""

    id: str
    first: str
    second: str

    @property
    def agree(self) -> bool:
        return self.first == self.second

    @property
    def decided_both(self) -> bool:
        """Pass or fail on both models (neither inconclusive nor not testable)."""
        return decided({"verdict": self.first}) and decided({"verdict": self.second})


@dataclass(frozen=True)
class CrossModelVerdicts:
    """Each audit's verdict on two models, side by side, and how many agree."""

    models: tuple[str, str]
    pairs: tuple[VerdictPair, ...]

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def n_agree(self) -> int:
        return sum(p.agree for p in self.pairs)

    @property
    def n_decided_both(self) -> int:
        return sum(p.decided_both for p in self.pairs)

    @property
    def n_decided_agree(self) -> int:
        return sum(p.decided_both and p.agree for p in self.pairs)

    def line(self) -> str:
        """``verdicts that agree across models: k of n`` and the decided ones among them."""
        return (
            f"verdicts that agree across models: {self.n_agree} of {self.n} "
            f"({self.n_decided_agree} of the {self.n_decided_both} decided, pass or fail, on both)"
        )

    def table(self) -> pd.DataFrame:
        """One row per audit: its claim id, the verdict on each model (columns named by the
        models), whether they agree."""
        a, b = self.models
        return pd.DataFrame(
            {
                "claim": [p.id for p in self.pairs],
                a: [p.first for p in self.pairs],
                b: [p.second for p in self.pairs],
                "agree": [p.agree for p in self.pairs],
            }
        )

    def record(self) -> dict[str, Any]:
        """What ``results.json`` keeps (``cross_model``): the models, the pairs and the counts."""
        return {
            "models": list(self.models),
            "pairs": [asdict(p) for p in self.pairs],
            "n": self.n,
            "n_agree": self.n_agree,
            "n_decided_both": self.n_decided_both,
            "n_decided_agree": self.n_decided_agree,
        }


def compare_verdicts(
    first: Mapping[str, str], second: Mapping[str, str], models: tuple[str, str]
) -> CrossModelVerdicts:
    """Pair the verdicts (claim id -> verdict) of every claim of ``second`` (the audits run on
    both models, in its order) with ``first``'s. A claim of ``second`` missing from ``first`` is
    an error (the second model runs a subset of the first's audits).

    >>> compare_verdicts({"M07.vs_null": "pass", "M08.vs_null": "fail", "MIB.vs_null": "pass"},
    ...                  {"M07.vs_null": "pass", "M08.vs_null": "inconclusive"}, ("a", "b")).line()
    'verdicts that agree across models: 1 of 2 (1 of the 1 decided, pass or fail, on both)'
    """
    if models[0] == models[1]:
        raise ValueError(f"models: {models[0]!r} twice; compare two models")
    missing = [i for i in second if i not in first]
    if missing:
        raise ValueError(
            f"claims {missing} of {models[1]} have no counterpart among {models[0]}'s "
            f"({', '.join(first)})"
        )
    return CrossModelVerdicts(models, tuple(VerdictPair(i, first[i], v) for i, v in second.items()))


def verdicts(claims: Sequence[Claim]) -> dict[str, str]:
    """Claim id -> verdict."""
    return {c.id: c.verdict for c in claims}


def model_prefix(model: str) -> str:
    """The prefix of a second model's claim ids: its name without the form
    (``real/qwen2.5-coder-0.5b-instruct`` -> ``qwen2.5-coder-0.5b-instruct/``)."""
    return model.rstrip("/").rsplit("/", 1)[-1] + "/"


def second_model_claims(family: Any, world: str | None = None) -> list[Claim]:
    """The claims of a second model's SAE audits (``family``: :class:`kit.audits.suite.SAEFamily`;
    ``None``: none), by the first model's rule, their ids prefixed by :func:`model_prefix` and their
    statements naming the model, so both models' claims sit in one ledger."""
    from .claims import study_claims

    if family is None:
        return []
    claims = study_claims(family.all_results, world=world)
    prefix = model_prefix(family.model_name)
    for c in claims:
        c.extra["audit_id"] = c.id
        c.id = prefix + c.id
        c.statement = f"On {family.model_name}: {c.statement}"
    return claims


def across_models(
    first: Sequence[Claim], second: Sequence[Claim], models: tuple[str, str]
) -> CrossModelVerdicts:
    """:func:`compare_verdicts` of the first model's claims and the second model's
    (:func:`second_model_claims`, matched by their unprefixed ids)."""
    return compare_verdicts(
        verdicts(first), {c.extra.get("audit_id", c.id): c.verdict for c in second}, models
    )
