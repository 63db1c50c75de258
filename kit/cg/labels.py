"""Concept labels for Competency Gaps: a pluggable labeller interface.

A *labeller* turns each concept's top-activating contexts (``[{"value", "word", "context"}]`` by
decreasing value, as :func:`kit.cg.saes.contexts_from_acts` and
:func:`kit.cg.model_space.hooked_contexts` write them) into one label per concept. Three sources:

- :class:`TopContextLabeller` (local SAEs, the default): the most frequent activating words, with
  stop-words, punctuation and special tokens filtered out (a concept firing on "the" and "," is
  labelled by the content words among its contexts; one firing only on function words says so).
- :func:`neuronpedia_labels`: the published explanations of an sae_lens SAE that has a Neuronpedia
  id (read through :func:`kit.models.hub.neuronpedia_explanations`, the network boundary).
- anything with the :class:`Labeller` signature (e.g. an LLM writing a description from each
  concept's top contexts): pass it as ``labeller=``.

The paper's App. E analysis of the labelled results (an LLM keeps the *relevant* missing concepts,
E.1/E.2, and matches concepts to another framework's categories, E.3) is :mod:`kit.cg.llm`, with the
LLM as a plug-in callable.

:func:`sae_labels` picks the source and says which one it used: offline (or with no Neuronpedia
id) the labels are local, and the returned source string says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from kit.models.sae_train import DEAD, label_from_contexts

STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just let me more
most my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves
""".split()
)
"""English function words that never make a label on their own: NLTK's English list, lower-case,
without its contraction fragments (s, t, d, ll, m, re, ve, y, o): single letters are answer options
(A-D) in these suites."""

_SPECIAL = re.compile(r"^(\[[A-Z]+\]|<[^<>\s]+>|<\|[^|]+\|>)$")
LABEL_MODES = ("auto", "local", "neuronpedia")


def is_content_word(word: str, stopwords: frozenset[str] = STOPWORDS) -> bool:
    """A word that may name a concept: it has a letter or digit, is no stop-word and no special
    token (``[CLS]``, ``<s>``, ``<|user|>``)."""
    w = word.strip()
    return (
        bool(w)
        and any(ch.isalnum() for ch in w)
        and not _SPECIAL.match(w)
        and w.lower() not in stopwords
    )


class Labeller(Protocol):
    """Per concept, one label from its top-activating contexts (an empty list: a dead concept)."""

    @property
    def name(self) -> str: ...  # read-only, so frozen dataclasses qualify

    def __call__(self, contexts: Sequence[Sequence[dict]]) -> list[str]: ...


@dataclass(frozen=True)
class TopContextLabeller:
    """The ``n_words`` most frequent content words among a concept's top contexts
    (:func:`kit.models.sae_train.label_from_contexts` on the contexts whose word passes
    :func:`is_content_word`). A concept whose contexts are all function words or punctuation gets
    ``"(stop-words/punctuation: ...)"`` with its most frequent ones; a concept with none is
    ``(dead)``."""

    n_words: int = 3
    stopwords: frozenset[str] = field(default=STOPWORDS)
    name: str = "top-context (stop-words filtered)"

    def label(self, contexts: Sequence[dict]) -> str:
        if not contexts:
            return DEAD
        content = [c for c in contexts if is_content_word(c["word"], self.stopwords)]
        if content:
            return label_from_contexts(content, self.n_words)
        shown = [c for c in contexts if c["word"].strip()] or [
            {"value": c["value"], "word": repr(c["word"])} for c in contexts
        ]
        return f"(stop-words/punctuation: {label_from_contexts(shown, self.n_words)})"

    def __call__(self, contexts: Sequence[Sequence[dict]]) -> list[str]:
        return [self.label(c) for c in contexts]


def neuronpedia_id(sae_name: str) -> str | None:
    """sae_lens's Neuronpedia id (``<modelId>/<saeId>``) of ``<release>/<sae_id>``; None for local
    SAEs (``minilm-sae/``, ``zoo-sae/``, ``twin-sae/``, directories) and releases without one."""
    from kit.models.sources import find_sae

    form = find_sae(sae_name) if "/" in sae_name else None
    if form is None or not form.published:
        return None
    from sae_lens.loading.pretrained_saes_directory import get_pretrained_saes_directory

    directory = get_pretrained_saes_directory()
    release, _, sae_id = sae_name.partition("/")
    if release not in directory:
        return None
    return (getattr(directory[release], "neuronpedia_id", None) or {}).get(sae_id)


def neuronpedia_labels(npid: str, d_sae: int) -> list[str]:
    """One label per feature from Neuronpedia's published explanations (``(no explanation)`` for a
    feature without one). Needs network: raises ``OSError`` offline."""
    from kit.models import hub

    explained = hub.neuronpedia_explanations(npid)
    return [explained.get(i) or "(no explanation)" for i in range(d_sae)]


def sae_labels(
    sae_name: str,
    d_sae: int,
    mode: str,
    local_contexts: Callable[[], list[list[dict]]],
    labeller: Labeller | None = None,
) -> tuple[list[str], str, list[list[dict]] | None]:
    """``(labels, source, contexts)`` for an SAE.

    ``mode``: ``auto`` = Neuronpedia's explanations when the SAE has a Neuronpedia id and the hub
    answers, else local; ``local`` = ``labeller`` (default :class:`TopContextLabeller`) on
    ``local_contexts()`` (called only then); ``neuronpedia`` = Neuronpedia or an error. ``source``
    names what was used and, when ``auto`` fell back, why ("labels are local: ...").
    """
    if mode not in LABEL_MODES:
        raise ValueError(f"labels={mode!r}; allowed values: {', '.join(LABEL_MODES)}")
    note = ""
    if mode in ("auto", "neuronpedia"):
        npid = neuronpedia_id(sae_name)
        if npid is None:
            if mode == "neuronpedia":
                raise ValueError(
                    f"labels='neuronpedia': SAE {sae_name!r} has no Neuronpedia id in sae_lens's "
                    "directory; use labels='local' or 'auto'"
                )
            note = "no Neuronpedia id"
        else:
            try:
                return neuronpedia_labels(npid, d_sae), f"Neuronpedia explanations ({npid})", None
            except OSError as e:
                if mode == "neuronpedia":
                    raise OSError(
                        f"labels='neuronpedia': Neuronpedia did not answer for {npid} "
                        f"({type(e).__name__}: {e}); offline, use labels='local' or 'auto'"
                    ) from e
                note = f"Neuronpedia unreachable ({type(e).__name__})"
    contexts = local_contexts()
    labeller = labeller or TopContextLabeller()
    if len(contexts) != d_sae:
        raise ValueError(f"local_contexts gave {len(contexts)} concepts, the SAE has {d_sae}")
    source = f"local: {labeller.name}" + (f"; labels are local ({note})" if note else "")
    return labeller(contexts), source, contexts
