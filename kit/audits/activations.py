"""Token-level activations at TransformerLens hooks, the raw material of the SAE audits."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from kit.models import tl


@dataclass
class TokenActivations:
    """Activations of every real (non-pad) token of a prompt set, flattened over prompts.

    ``acts[hook]`` is ``Float[Tensor, "n_tokens d_model"]``; row ``i`` is token ``token_ids[i]``
    at ``position[i]`` of prompt ``prompt_index[i]``; ``next_ids[i]`` is the token after it
    (``-1`` at a prompt's last token).
    """

    acts: dict[str, Float[Tensor, "n_tokens d"]]
    token_ids: Int[Tensor, " n_tokens"]
    next_ids: Int[Tensor, " n_tokens"]
    prompt_index: Int[Tensor, " n_tokens"]
    position: Int[Tensor, " n_tokens"]

    @property
    def n_tokens(self) -> int:
        return int(self.token_ids.shape[0])

    def last_token_rows(self) -> Int[Tensor, " n_prompts"]:
        """Row index of each prompt's last token (prompt order)."""
        n = int(self.prompt_index.max()) + 1 if self.n_tokens else 0
        last = torch.full((n,), -1, dtype=torch.long)
        rows = torch.arange(self.n_tokens)
        # rows are in (prompt, position) order, so the last write per prompt wins
        last[self.prompt_index] = rows
        return last


def tokenize(model, prompts: list[str]) -> tuple[Int[Tensor, "batch pos"], Int[Tensor, " batch"]]:
    """Right-padded tokens, BOS first, and each prompt's length.

    BOS whether or not the model's tokenizer adds one (GPT-2's does not): the SAEs audited were
    trained on BOS-first text (SAELens's ``prepend_bos=True``) and the IOI work reads GPT-2 so, as
    TransformerLens prepends by default; :func:`token_activations` drops that position."""
    if not prompts:
        raise ValueError("prompts is empty: need at least one prompt")
    seqs = [model.to_tokens(p, prepend_bos=True)[0].cpu() for p in prompts]
    lengths = torch.tensor([len(s) for s in seqs])
    pad = getattr(getattr(model, "tokenizer", None), "pad_token_id", None)
    tokens = torch.full(
        (len(seqs), int(lengths.max())), 0 if pad is None else int(pad), dtype=torch.long
    )
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = s
    return tokens, lengths


@torch.no_grad()
def token_activations(
    model, prompts: list[str], hooks: list[str], batch_size: int = 32, skip_bos: bool = True
) -> TokenActivations:
    """Run ``prompts`` and keep every real token's activation at each hook in ``hooks``.

    ``skip_bos`` drops position 0 when it is the BOS token: its residual is a huge constant
    vector that would dominate norms, spectra and SAE statistics.
    """
    if not hooks:
        raise ValueError("hooks is empty: name at least one hook, e.g. 'blocks.0.hook_resid_post'")
    tokens, lengths = tokenize(model, prompts)
    layers = [int(h.split(".")[1]) for h in hooks if h.startswith("blocks.")]
    stop = max(layers) + 1 if layers and len(layers) == len(hooks) else None
    device = next(model.parameters()).device
    out: dict[str, list[Tensor]] = {h: [] for h in hooks}
    tok_ids, nxt_ids, p_idx, pos_idx = [], [], [], []
    start = 1 if skip_bos else 0  # tokenize writes a BOS first
    for b0 in range(0, len(prompts), batch_size):
        tb = tokens[b0 : b0 + batch_size]
        lb = lengths[b0 : b0 + batch_size]
        _, cache = tl.run_with_cache(model, tb.to(device), list(hooks), stop_at_layer=stop)
        for j in range(tb.shape[0]):
            n = int(lb[j])
            for h in hooks:
                out[h].append(cache[h][j, start:n].float().cpu())
            tok_ids.append(tb[j, start:n])
            nxt = torch.full((n - start,), -1, dtype=torch.long)
            nxt[:-1] = tb[j, start + 1 : n]
            nxt_ids.append(nxt)
            p_idx.append(torch.full((n - start,), b0 + j, dtype=torch.long))
            pos_idx.append(torch.arange(start, n))
    return TokenActivations(
        acts={h: torch.cat(v) for h, v in out.items()},
        token_ids=torch.cat(tok_ids),
        next_ids=torch.cat(nxt_ids),
        prompt_index=torch.cat(p_idx),
        position=torch.cat(pos_idx),
    )


@torch.no_grad()
def sae_features(
    sae, acts: Float[Tensor, "n d_in"], batch_size: int = 4096, cpu: bool = True
) -> Float[Tensor, "n d_sae"]:
    """SAE feature activations of ``acts`` (encoded in chunks on the SAE's device; returned on CPU,
    or left on that device with ``cpu=False``)."""
    dev = sae.W_dec.device
    chunks = [
        sae.encode(acts[i : i + batch_size].to(dev, sae.W_dec.dtype)).float()
        for i in range(0, acts.shape[0], batch_size)
    ]
    chunks = [c.cpu() for c in chunks] if cpu else chunks
    return torch.cat(chunks) if chunks else torch.zeros(0, sae.cfg.d_sae)


class FeatureBlocks:
    """An SAE's features of ``acts``, ``block(j0, j1)`` = features ``j0:j1`` for every token, on the
    SAE's device, without ever forming the ``n x d_sae`` matrix (a 131k-feature SAE on 30k tokens
    would be 16 GB). Exact for sae_lens's standard (ReLU), JumpReLU and TopK SAEs (TopK: each
    token's k-th largest pre-activation is found first, block by block); any other SAE is encoded in
    full once and sliced (``blockwise`` False)."""

    @torch.no_grad()
    def __init__(self, sae, acts: Float[Tensor, "n d_in"], chunk: int = 8192):
        from sae_lens import JumpReLUSAE, StandardSAE, TopKSAE

        self.sae, self.chunk, self.d_sae = sae, int(chunk), int(sae.cfg.d_sae)
        self.device = sae.W_dec.device
        self.n = int(acts.shape[0])
        self.kind = (
            "topk"
            if isinstance(sae, TopKSAE)
            else "jumprelu"
            if isinstance(sae, JumpReLUSAE)
            else "standard"
            if isinstance(sae, StandardSAE)
            else ""
        )
        if self.kind == "topk" and getattr(sae.activation_fn, "use_sparse_activations", False):
            self.kind = ""
        act = getattr(sae, "activation_fn", None)
        if self.kind in ("standard", "jumprelu") and not isinstance(act, torch.nn.ReLU):
            self.kind = ""
        self.blockwise = bool(self.kind)
        if not self.blockwise:
            self._full = sae_features(sae, acts, cpu=False)
            return
        self._in = sae.process_sae_in(acts.to(self.device, sae.W_dec.dtype))
        if self.kind == "topk":
            k = sae.activation_fn.k
            top = torch.full((self.n, 0), -torch.inf, device=self.device)
            for j in range(0, self.d_sae, self.chunk):
                pre = self._pre(j, min(j + self.chunk, self.d_sae))
                top = torch.cat([top, pre.topk(min(k, pre.shape[1]), dim=1).values], 1)
                top = top.topk(min(k, top.shape[1]), dim=1).values
            self._kth = top[:, -1:]

    def _pre(self, j0: int, j1: int) -> Tensor:
        sae = self.sae
        pre = self._in @ sae.W_enc[:, j0:j1] + sae.b_enc[j0:j1]
        if self.kind == "topk" and getattr(sae.cfg, "rescale_acts_by_decoder_norm", False):
            pre = pre * sae.W_dec[j0:j1].norm(dim=-1)
        return pre

    @torch.no_grad()
    def block(self, j0: int, j1: int) -> Float[Tensor, "n c"]:
        if not self.blockwise:
            return self._full[:, j0:j1]
        pre = self._pre(j0, j1)
        out = pre.relu()
        if self.kind == "jumprelu":
            out = out * (pre > self.sae.threshold[j0:j1])
        elif self.kind == "topk":
            out = out * (pre >= self._kth)
        return out.float()


def sae_hook(sae, default: str | None = None) -> str:
    """The hook an SAE was trained at (``sae.cfg.metadata.hook_name``), else ``default``."""
    hook = getattr(getattr(sae.cfg, "metadata", None), "hook_name", None) or default
    if not hook:
        raise ValueError(
            "the SAE's config names no hook (cfg.metadata.hook_name) and no default hook was given"
        )
    return hook


def unit_rows(x: Float[Tensor, "n d"], eps: float = 1e-12) -> Float[Tensor, "n d"]:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)


def max_cosine(
    a: Float[Tensor, "n d"], b: Float[Tensor, "m d"], chunk: int = 2048
) -> tuple[Float[Tensor, " n"], Int[Tensor, " n"]]:
    """For each row of ``a``, the largest cosine with any row of ``b`` and its index.

    Chunked so two 24k-feature dictionaries never form a full 24k x 24k matrix at once.
    """
    an, bn = unit_rows(a.float()), unit_rows(b.float())
    vals, idx = [], []
    for i in range(0, an.shape[0], chunk):
        v, j = (an[i : i + chunk] @ bn.T).max(dim=1)
        vals.append(v)
        idx.append(j)
    return torch.cat(vals), torch.cat(idx)
