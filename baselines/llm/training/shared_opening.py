"""GRPO log-probabilities with the episodes' shared opening computed once, replies only.

Every episode of a ``train-llm`` step starts with the same opening: the system
prompt, the few-shot examples and most of the task's first observation, about
300-600 of an episode's tokens with SmolLM2.  TRL's GRPO update runs each
episode of a micro-batch through the model whole, so it computes that opening
once per episode, with gradients.  :func:`shared_opening_logps` computes it
once per micro-batch instead: it runs the longest prefix all rows share as one
row (with gradients, since LoRA changes its keys and values), repeats its
cache over the batch, and runs only each row's rest.  Autograd sums the rows'
gradients through the repeat, so the loss and its gradients are the ones of
the whole-row forward, up to float rounding: rotary position embeddings see
only relative positions, so dropping each row's left padding changes nothing.

Three more savings, each exact (``tests/test_shared_opening.py`` checks the
log-probs and the LoRA gradients against TRL's whole-row forward to 1e-5):

* **Replies only.**  The LM head (49 152 x 576 for SmolLM2, as costly as 8 of
  its 30 layers) runs only at the positions whose next token the loss
  scores: the model's reply tokens (``score_mask``, TRL's ``tool_mask``), never
  the env's tokens in the completion, which the loss masks anyway.  TRL's own
  fused head scores every position on a CPU.  Unscored positions read 0.
* **Each micro-batch at its own width.**  TRL pads every completion to the
  longest of the whole step; :class:`SharedOpeningGRPOTrainer` cuts each
  micro-batch's columns that are padding in all of its rows.
* **LoRA on the top layers** (``LoRASpec(layers=N)``): nothing below the
  lowest adapted layer needs a gradient, so autograd records none there.

The layout is TRL's: ``input_ids`` is the left-padded prompt followed by the
right-padded completion (``logits_to_keep`` columns), and the result is the
per-token log-probabilities (and entropies, without gradient: TRL only logs
them) of the completion columns, as
``GRPOTrainer._get_per_token_logps_and_entropies`` returns them.  It needs a
model with a full dynamic cache and rotary positions (Llama, Qwen2, Mistral
and the like) and a plain LM head (no logit scaling or soft-capping); anything
else is left to TRL's forward.  :class:`SharedOpeningGRPOTrainer` is TRL's
trainer with it.  Imports trl (the ``[rl]`` extra).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from trl import GRPOTrainer

from baselines.llm.agents.prefix_cache import cache_argument
from baselines.llm.models.precision import autocast_for

__all__ = ["MIN_SHARED_TOKENS", "SharedOpeningGRPOTrainer", "shared_opening_logps"]

#: Config fields that scale or cap the logits, which the plain head here does not apply.
_LOGIT_SCALING = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)

#: Below this many shared tokens the saving is too small to be worth a second call.
MIN_SHARED_TOKENS = 16


def shared_opening_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool = False,
    *,
    temperature: float = 1.0,
    score_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Return the completion's log-probs (and entropies), the shared opening run once.

    The log-probs are of the logits divided by ``temperature`` (TRL's sampling
    temperature).  ``score_mask`` (rows x ``logits_to_keep``, 1 where the loss
    counts a token) limits scoring to those tokens; the others read 0.

    Returns None when the rows share fewer than :data:`MIN_SHARED_TOKENS`
    tokens, hold a single row, are not laid out as TRL lays them out (left
    padding, then the completion), or the model scales its logits; the caller
    then runs the rows whole.
    """
    prompts = _prompts(input_ids, attention_mask, logits_to_keep)
    if prompts is None or len(prompts) < 2 or not _plain_head(model):
        return None
    # Each row keeps at least one prompt token in its rest, whose output scores
    # the first completion token.
    shared = min(_common_prefix(prompts), min(len(p) for p in prompts) - 1)
    if shared < MIN_SHARED_TOKENS:
        return None
    causal_lm = _causal_lm(model)
    backbone = causal_lm.base_model
    cache = DynamicCache(config=causal_lm.config)
    argument = cache_argument(backbone)
    opening = prompts[0][:shared].unsqueeze(0)
    backbone(input_ids=opening, attention_mask=torch.ones_like(opening), **{argument: cache})
    cache.batch_repeat_interleave(len(prompts))
    scored = attention_mask[:, -logits_to_keep:]
    if score_mask is not None:
        scored = scored * score_mask
    rest_ids, rest_mask, labels, starts = _rests(
        prompts, shared, input_ids, attention_mask, scored, logits_to_keep
    )
    hidden = backbone(
        input_ids=rest_ids,
        attention_mask=torch.cat([rest_mask.new_ones(len(prompts), shared), rest_mask], dim=1),
        **{argument: cache},
    ).last_hidden_state
    # Output column j scores rest token j + 1, so completion token c of a row
    # whose rest starts with s prompt tokens is column s + c - 1.
    logps, entropy = _score(causal_lm, hidden[:, :-1], labels[:, 1:], temperature, compute_entropy)
    columns = starts.unsqueeze(1) - 1 + torch.arange(logits_to_keep, device=starts.device)
    return logps.gather(1, columns), None if entropy is None else entropy.gather(1, columns)


def _causal_lm(model: Any) -> Any:
    """Return the causal LM inside ``model`` (a peft model's base model, else the model)."""
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def _plain_head(model: Any) -> bool:
    """Return whether the model's logits are its LM head's output, unscaled and uncapped."""
    config = _causal_lm(model).config.get_text_config()
    return all(getattr(config, name, None) in (None, 1, 1.0) for name in _LOGIT_SCALING)


def _score(
    causal_lm: Any,
    hidden: torch.Tensor,
    labels: torch.Tensor,
    temperature: float,
    compute_entropy: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Return each position's log-prob of its label (and entropy), 0 where the label is -100.

    The LM head runs only at the labelled positions.
    """
    mask = labels != -100
    logits = causal_lm.get_output_embeddings()(hidden[mask]).float() / temperature
    log_softmax = logits.log_softmax(dim=-1)
    picked = log_softmax.gather(1, labels[mask].unsqueeze(1)).squeeze(1)
    # masked_scatter keeps an all-unlabelled micro-batch connected to the graph.
    logps = picked.new_zeros(mask.shape).masked_scatter(mask, picked)
    if not compute_entropy:
        return logps, None
    with torch.no_grad():
        entropy = -(log_softmax.exp() * log_softmax).sum(dim=-1)
    return logps, entropy.new_zeros(mask.shape).masked_scatter(mask, entropy)


def _prompts(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int
) -> list[torch.Tensor] | None:
    """Return each row's unpadded prompt, or None if a prompt is not left-padded."""
    width = input_ids.size(1) - logits_to_keep
    if width <= 0:
        return None
    mask = attention_mask[:, :width]
    lengths = mask.sum(dim=1)
    # Left padding: each row's mask is zeros, then ones to the end of the prompt.
    expected = torch.arange(width, device=mask.device).unsqueeze(0) >= (width - lengths).unsqueeze(
        1
    )
    if not torch.equal(mask.bool(), expected):
        return None
    return [row[width - int(n) : width] for row, n in zip(input_ids, lengths, strict=True)]


def _common_prefix(rows: list[torch.Tensor]) -> int:
    """Return how many leading tokens every row shares."""
    shortest = min(len(row) for row in rows)
    first = rows[0][:shortest]
    agree = torch.ones(shortest, dtype=torch.bool, device=first.device)
    for row in rows[1:]:
        agree &= row[:shortest] == first
    differ = (~agree).nonzero()
    return int(differ[0]) if len(differ) else shortest


def _rests(
    prompts: list[torch.Tensor],
    shared: int,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    scored: torch.Tensor,
    logits_to_keep: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return the rows after the opening, right-padded: ids, mask, labels, prompt lengths.

    A row's rest is its prompt after the opening, then its completion columns
    with their own mask (padding and any masked token stay masked); only the
    completion tokens that ``scored`` marks are labelled.
    """
    completion = input_ids[:, -logits_to_keep:]
    completion_mask = attention_mask[:, -logits_to_keep:]
    starts = torch.tensor([len(p) - shared for p in prompts], device=input_ids.device)
    width = int(starts.max()) + logits_to_keep
    ids = input_ids.new_zeros(len(prompts), width)
    mask = attention_mask.new_zeros(len(prompts), width)
    labels = torch.full_like(ids, -100)
    for row, (prompt, start) in enumerate(zip(prompts, starts.tolist(), strict=True)):
        ids[row, :start] = prompt[shared:]
        mask[row, :start] = 1
        end = start + logits_to_keep
        ids[row, start:end] = completion[row]
        mask[row, start:end] = completion_mask[row]
        labels[row, start:end] = completion[row].masked_fill(scored[row] == 0, -100)
    return ids, mask, labels, starts


class SharedOpeningGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` whose log-probs run the episodes' shared opening once.

    Text-only batches go through :func:`shared_opening_logps` (the same loss
    and gradients, less compute): each chunk of rows cut to its own longest
    completion, and, inside the loss, only the model's reply tokens scored.
    Anything else (images, a MoE aux loss), or a chunk whose rows share too
    little, goes through TRL's whole-row forward.
    """

    #: The loss's token mask (TRL's ``tool_mask``) while :meth:`_compute_loss` runs.
    _score_mask: torch.Tensor | None = None

    def _compute_loss(self, model, inputs):
        # The log-prob call below gets no token mask from TRL; the loss needs the
        # log-probs of the reply tokens only (env tokens are multiplied by 0).
        self._score_mask = inputs.get("tool_mask")
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._score_mask = None

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **extra,
    ):
        with autocast_for(model):  # a bfloat16 base computes in bfloat16 (precision.py)
            if compute_aux_loss or any(value is not None for value in extra.values()):
                # Images or a MoE aux loss: only TRL's whole-row forward handles them.
                return super()._get_per_token_logps_and_entropies(
                    model,
                    input_ids,
                    attention_mask,
                    logits_to_keep,
                    batch_size,
                    compute_entropy,
                    compute_aux_loss,
                    **extra,
                )
            return self._text_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy
            )

    def _text_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy
    ):
        """A text-only batch's log-probs (and entropies), chunk by chunk, the opening shared."""
        score_mask = self._score_mask
        if score_mask is not None and score_mask.shape != (input_ids.size(0), logits_to_keep):
            score_mask = None  # not this call's rows: score every completion token
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            rows = slice(start, start + batch_size)
            chunk = self._chunk_logps(
                model,
                input_ids[rows],
                attention_mask[rows],
                logits_to_keep,
                compute_entropy,
                None if score_mask is None else score_mask[rows],
            )
            logps.append(chunk[0])
            entropies.append(chunk[1])
        entropy = torch.cat(entropies) if compute_entropy else None
        return torch.cat(logps), entropy, None

    def _chunk_logps(self, model, ids, mask, logits_to_keep, compute_entropy, score_mask):
        """One chunk's log-probs (and entropies): cut to its own width, padded back with 0."""
        completion = mask[:, -logits_to_keep:]
        used = completion.any(dim=0).nonzero()
        keep = int(used[-1]) + 1 if len(used) else 1
        cut = logits_to_keep - keep
        with self.accelerator.autocast():
            chunk = shared_opening_logps(
                model,
                ids[:, : ids.size(1) - cut],
                mask[:, : mask.size(1) - cut],
                keep,
                compute_entropy,
                temperature=self.temperature,
                score_mask=None if score_mask is None else score_mask[:, :keep],
            )
        if chunk is None:
            parent = super()._get_per_token_logps_and_entropies
            return parent(model, ids, mask, logits_to_keep, compute_entropy=compute_entropy)[:2]
        return tuple(
            None if values is None else torch.nn.functional.pad(values, (0, cut))
            for values in chunk
        )
