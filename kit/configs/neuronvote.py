"""Config of notebooks/05_neuronvote.ipynb (NeuronVote: comparing neuron-ranking methods)."""

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from kit.core.params import BaseConfig, distinct
from kit.core.registry import one_of
from kit.neuronvote.concepts import PAPER_POS_TAGS
from kit.neuronvote.methods import METHODS, PAPER_METHODS, RANKING_METHODS

Definitions = Literal["paper_text", "neurox"]
Method = Annotated[str, one_of(lambda: RANKING_METHODS)]
"""A name of :data:`kit.neuronvote.methods.RANKING_METHODS` when the config is validated."""
Layer = Annotated[int, Field(ge=0)]


class Config(BaseConfig):
    encoder: str = "minilm"
    """Encoder whose word representations are ranked: ``minilm`` (offline all-MiniLM-L6-v2) or a
    Hugging Face id (``bert-base-cased``, ``roberta-base``, ``xlm-roberta-base``; needs network)."""
    extra_encoders: list[str] = []
    """Further encoders run the same way (the ``paper`` profile's RoBERTa and XLM-R)."""
    site: Literal["hook_resid_post", "mlp.hook_post"] = "hook_resid_post"
    """Which neurons: ``hook_resid_post`` = the layer's output hidden state (the paper's BERT
    "neurons", d_model wide) or ``mlp.hook_post`` (the MLP's GELU activations, d_mlp wide)."""
    layers: list[Layer] | None = Field(None, min_length=1)
    """Encoder blocks (0-based) to analyse; ``None`` = first, middle and last (the paper's
    1/6/12)."""
    source: Literal["ud_ewt", "conll2000"] = "ud_ewt"
    """POS-tagged corpus: UD English EWT dev+test (XPOS) or CoNLL-2000 (PTB POS)."""
    definitions: list[Definitions] = ["paper_text", "neurox"]
    """Definition sets to run (``kit.neuronvote.methods`` module doc): ``paper_text`` (eqs. 2-6 as
    printed) and/or ``neurox`` (the NeuroX code behind the paper's tables: AP "IoU", Adam-trained
    probes with an unsquared L2 norm, class-mean Gaussian prior). The further experiments (chunking,
    all layers) use the one closer to the paper's Tables 2-4."""
    random_draws: int = Field(20, ge=1)
    """Independent Random permutations averaged for Random's AvgOverlap / NeuronVote."""
    chunking: bool = True
    """Also run the CoNLL-2000 chunking concepts (the paper's Table 6, its 10 chunk tags)."""
    all_layers: bool = True
    """Also run every layer including the embedding output (Tables 7-14, Figures 3-7); needs
    ``site: hook_resid_post``."""
    reseeds: int = Field(2, ge=0)
    """Further study seeds under which every method but the seedless Gaussian re-ranks (new
    tie-breaks, probe initialisations, Random draws): the seed-stability of every AvgOverlap /
    NeuronVote number, and the claims recomputed under each (their ``stability``)."""
    shuffles: int = Field(3, ge=0)
    """Shuffled-label copies per (concept, layer): the voters and MeanSelect rank the concept's
    training labels shuffled among its words, the null of the agreement claims (what the methods
    agree on without the concept). 0 skips it (those claims are then not testable)."""
    n_boot: int = Field(1000, ge=100)
    """Bootstrap resamples (over concepts) for the intervals of every AvgOverlap / NeuronVote
    number."""
    n_null: int = Field(1000, ge=100)
    """Draws of a setting's mean under shuffled labels (each picks one shuffled copy per unit)."""
    second_source: Literal["ud_ewt", "conll2000"] | None = None
    """Optional second corpus: NeuronVote (Table 3 analogue) of the encoder on it too."""
    tags: list[str] | None = Field(list(PAPER_POS_TAGS), min_length=1)
    """Concepts (tags) to consider; ``None`` = every tag with enough examples. Default: the paper's
    20 POS tags."""
    min_examples: int = Field(200, ge=1)
    """Drop tags with fewer words than this in the corpus (the paper: 200)."""
    max_per_class: int | None = Field(200, ge=10)
    """Subsample each concept to at most this many positive (and as many negative) words; ``None`` =
    all (UD EWT: 725-6672 per tag, so 1015-9341 training words per concept for 384 neurons)."""
    extra_max_per_class: int | None = Field(200, ge=10)
    """``max_per_class`` of the further studies (chunking, every layer), which multiply the work by
    their 10 concepts x 3 layers and 18 concepts x 7 layers; ``None`` = all. With all POS examples
    already encoded, the all-layer study draws its capped tasks from them (no second forward
    pass)."""
    max_sentences: int | None = Field(None, ge=10)
    """Use a seeded sample of this many sentences of the corpus; ``None`` = all."""
    methods: list[Method] = Field(list(METHODS), min_length=1)
    """Ranking methods to run (Random and MeanSelect included: the baseline and the case study)."""
    voters: list[Method] = list(PAPER_METHODS)
    """Methods forming the consensus of AvgOverlap / NeuronVote (the paper's six); others are only
    scored."""
    s_values: list[int] = [10, 30, 50]
    """Top-s sizes for AvgOverlap and NeuronVote (Tables 2-4)."""
    accuracy_s: list[int] = [30, 50, 70, 100]
    """Top-s sizes for the classifier-accuracy evaluation (Table 1)."""
    pairwise_s: list[int] = [10, 20, 30, 40, 50]
    """Top-s sizes averaged in the pairwise-overlap heatmaps (Figure 1: top 10-50)."""
    iou_percentile: float = Field(90.0, ge=0.0, lt=100.0)
    """IoU method: a neuron is "on" for a word when its activation exceeds this percentile of its
    activations."""
    lambda1: float = Field(0.01, gt=0.0)
    """L1 strength of the Lasso / LCA probes, per mean loss (the paper: 0.01)."""
    lambda2: float = Field(0.01, gt=0.0)
    """L2 strength of the Ridge / LCA probes, per mean loss (the paper: 0.01)."""
    probe_standardize: bool = False
    """Fit the Lasso / Ridge / LCA probes on z-scored activations instead of the raw ones (the
    paper's eqs. 3-5 use raw activations; then |weight| also reflects a neuron's scale)."""
    gaussian_max_neurons: int | None = Field(100, ge=1)
    """Greedy steps of the Gaussian method (the rest of its ranking follows its last-step scores);
    ``None`` = the full greedy ranking. Only the top max(s) neurons are ever used."""
    batch_size: int = Field(32, ge=1, le=1024)
    """Sentences per encoder forward pass."""
    decoder_model: str | None = "zoo/base-m"
    """Decoder analysed beside the encoder: a zoo member (on the tiny world's word roles) or a real
    model (``real/smollm2-135m-instruct``, on ``decoder_source``); ``None`` skips it. The paper ran
    encoders only: a decoder tests its claims on another kind of model."""
    decoder_source: Literal["world-roles", "ud_ewt", "conll2000"] = "world-roles"
    """The decoder's concepts: the tiny world's word roles (zoo decoders: their vocabulary has no
    English) or a POS corpus with ``tags`` and ``min_examples`` as for the encoder (real
    decoders)."""
    decoder_max_sentences: int | None = Field(None, ge=10)
    """Seeded sample of the POS corpus for the decoder (its forward pass is the cost); ``None`` =
    all."""
    decoder_site: Literal["hook_resid_post", "mlp.hook_post"] = "mlp.hook_post"
    """Decoder neurons: the MLP activations (d_mlp: 384 for the tiny world's base-m, as wide as
    MiniLM's hidden state) or the residual stream (only 96 wide there)."""
    decoder_layers: list[Layer] | None = Field(None, min_length=1)
    """Decoder blocks to analyse; ``None`` = first, middle and last."""
    decoder_n_per_task: int = Field(60, ge=5)
    """Prompts per tiny-world task in the word-role concept corpus."""
    decoder_min_examples: int = Field(200, ge=1)
    """Minimum words per role for the decoder's concepts."""

    @model_validator(mode="after")
    def _decoder_vocabulary(self) -> "Config":
        from kit.models.sources import form_of

        if form_of(self.decoder_model).world_member and self.decoder_source != "world-roles":
            raise ValueError(
                f"decoder_source={self.decoder_source!r} with "
                f"decoder_model={self.decoder_model!r}: "
                "a zoo decoder's ~250-word vocabulary has no English, so its POS words would be "
                "<unk>; allowed for zoo decoders: world-roles"
            )
        return self

    @field_validator("s_values", "accuracy_s", "pairwise_s")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or min(v) < 1:
            raise ValueError("must be a non-empty list of positive integers")
        return v

    @field_validator("definitions")
    @classmethod
    def _some_definitions(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError("must list paper_text and/or neurox, each at most once")
        return v

    @field_validator("voters")
    @classmethod
    def _two_voters(cls, v: list[str]) -> list[str]:
        if len(set(v)) < 2:
            raise ValueError("need at least two distinct voters for leave-one-out consensus")
        return v

    @model_validator(mode="after")
    def _once(self) -> "Config":
        for field in ("extra_encoders", "layers", "tags", "methods", "voters", "decoder_layers"):
            distinct(field, getattr(self, field))
        return self
