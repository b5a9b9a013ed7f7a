"""GRPO log-probabilities with the episodes' shared opening computed once.

Every episode of a ``train-llm`` step starts with the same opening: the system
prompt, the few-shot examples and most of the task's first observation, about
400-600 of an episode's ~900 tokens with SmolLM2.  TRL's GRPO update runs each
episode of a micro-batch through the model whole, so it computes that opening
once per episode, with gradients.  :func:`shared_opening_logps` computes it
once per micro-batch instead: it runs the longest prefix all rows share as one
row (with gradients, since LoRA changes its keys and values), repeats its
cache over the batch, and runs only each row's rest.  Autograd sums the rows'
gradients through the repeat, so the loss and its gradients are the ones of
the whole-row forward, up to float rounding: rotary position embeddings see
only relative positions, so dropping each row's left padding changes nothing.

The layout is TRL's: ``input_ids`` is the left-padded prompt followed by the
right-padded completion (``logits_to_keep`` columns), and the result is the
per-token log-probabilities (and entropies) of the completion columns, as
``GRPOTrainer._get_per_token_logps_and_entropies`` returns them.  It needs the
fused LM head TRL puts on the model (``fused_lm_head=True``) and a model with a
full dynamic cache and rotary positions (Llama, Qwen2, Mistral and the like).
:class:`SharedOpeningGRPOTrainer` is TRL's trainer with it.  Imports trl (the
``[rl]`` extra).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from trl import GRPOTrainer

from baselines.llm.prefix_cache import cache_argument

__all__ = ["MIN_SHARED_TOKENS", "SharedOpeningGRPOTrainer", "shared_opening_logps"]

#: Below this many shared tokens the saving is too small to be worth a second call.
MIN_SHARED_TOKENS = 16


def shared_opening_logps(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """Return the completion's log-probs (and entropies), the shared opening run once.

    Returns None when the rows share fewer than :data:`MIN_SHARED_TOKENS`
    tokens, hold a single row, or are not laid out as TRL lays them out (left
    padding, then the completion); the caller then runs the rows whole.
    """
    prompts = _prompts(input_ids, attention_mask, logits_to_keep)
    if prompts is None or len(prompts) < 2:
        return None
    # Each row keeps at least one prompt token in its rest, whose output scores
    # the first completion token.
    shared = min(_common_prefix(prompts), min(len(p) for p in prompts) - 1)
    if shared < MIN_SHARED_TOKENS:
        return None
    cache = DynamicCache(config=model.config)
    argument = cache_argument(model)
    opening = prompts[0][:shared].unsqueeze(0)
    model(
        input_ids=opening,
        attention_mask=torch.ones_like(opening),
        **{argument: cache},
        use_cache=True,
        logits_to_keep=1,
    )
    cache.batch_repeat_interleave(len(prompts))
    rest_ids, rest_mask, labels, starts = _rests(
        prompts, shared, input_ids, attention_mask, logits_to_keep
    )
    outputs = model(
        input_ids=rest_ids,
        attention_mask=torch.cat([rest_mask.new_ones(len(prompts), shared), rest_mask], dim=1),
        **{argument: cache},
        labels=labels,
        fused_lm_head=True,
    )
    # Output column j scores rest token j + 1, so completion token c of a row
    # whose rest starts with s prompt tokens is column s + c - 1.
    columns = starts.unsqueeze(1) - 1 + torch.arange(logits_to_keep, device=starts.device)
    logps = outputs.log_probs.gather(1, columns)
    entropy = getattr(outputs, "entropy", None)
    entropies = entropy.gather(1, columns) if compute_entropy and entropy is not None else None
    return logps, entropies


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
    logits_to_keep: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return the rows after the opening, right-padded: ids, mask, labels, prompt lengths.

    A row's rest is its prompt after the opening, then its completion columns
    with their own mask (padding and any masked token stay masked); only the
    completion's unmasked tokens are labelled.
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
        labels[row, start:end] = completion[row].masked_fill(completion_mask[row] == 0, -100)
    return ids, mask, labels, starts


class SharedOpeningGRPOTrainer(GRPOTrainer):
    """TRL's ``GRPOTrainer`` whose log-probs run the episodes' shared opening once.

    Text-only batches go through :func:`shared_opening_logps` (the same loss
    and gradients, less compute); anything else (images, a MoE aux loss), or a
    chunk whose rows share too little, goes through TRL's whole-row forward.
    """

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
        parent = super()._get_per_token_logps_and_entropies
        if compute_aux_loss or any(value is not None for value in extra.values()):
            return parent(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **extra,
            )
        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            ids, mask = (
                input_ids[start : start + batch_size],
                attention_mask[start : start + batch_size],
            )
            with self.accelerator.autocast():
                chunk = shared_opening_logps(model, ids, mask, logits_to_keep, compute_entropy)
            if chunk is None:
                chunk = parent(model, ids, mask, logits_to_keep, compute_entropy=compute_entropy)[
                    :2
                ]
            logps.append(chunk[0])
            entropies.append(chunk[1])
        entropy = torch.cat(entropies) if compute_entropy else None
        return torch.cat(logps), entropy, None
