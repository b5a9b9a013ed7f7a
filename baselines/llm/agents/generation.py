"""Generation with a transformers model: seeded sampling, batched replies, end tokens.

What :class:`~baselines.llm.agents.hf_agent.HFAgent` (evaluation) and the GRPO
rollout (:mod:`baselines.llm.training.rollout`, training) share to turn prompts into
replies, so that a model is trained on replies sampled exactly as it is
evaluated:

* :func:`context_length` and :func:`eos_token_ids` read a model's context and
  its end tokens;
* :class:`GumbelSampler` samples each row from its own seeded generator (the
  Gumbel-max trick), so a row's sample does not depend on its batch;
* :func:`generate_replies` left-pads prompts and calls ``model.generate`` once;
* :class:`HFGenerator` plays one turn of many training episodes (with the
  per-episode prefix cache by default) and records each sampled token's
  log-probability; :class:`VLLMGenerator` does the same through TRL's vLLM
  engine; :func:`reply_decoder` turns a reply's tokens into its text.

Needs torch and transformers (the ``[llm]`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from baselines.llm.agents.prefix_cache import PrefixCacheDecoder
from baselines.llm.models.precision import autocast_for
from baselines.llm.prompting.replies import reply_with_end
from wrappers.utils.validators import check_int

__all__ = [
    "Generate",
    "Generation",
    "GumbelSampler",
    "HFGenerator",
    "ReplySampling",
    "VLLMGenerator",
    "context_length",
    "eos_token_ids",
    "generate_replies",
    "left_pad",
    "reply_decoder",
]

# Model configs name their context length differently.
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")


def context_length(model: Any, tokenizer: Any, override: int | None = None) -> int | None:
    """Return the model's context length in tokens: ``override``, its config's, or ``None``.

    A config that names none falls back to the tokenizer's ``model_max_length``
    (unless that is the huge sentinel of a tokenizer without a limit).
    """
    if override is not None:
        return check_int(override, "max_context", 2)
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    for key in _CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    # Tokenizers without a known limit report a huge sentinel.
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and 0 < limit < 10**7 else None


def eos_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """Return every token id that ends a generation (chat models often have several)."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured]
    ids = [token for token in ids if isinstance(token, int)]
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    if not ids:
        raise ValueError(
            "The tokenizer has no end-of-sequence token, so generations could not stop; "
            "pass a tokenizer with eos_token set."
        )
    return ids


class GumbelSampler(LogitsProcessor):
    """Turn greedy decoding into seeded, per-row sampling (the Gumbel-max trick).

    Each row has its own generator, so a row's samples do not depend on the
    other rows in the batch.  Under ``generate`` rows that have already
    finished still draw noise (their tokens are discarded);
    :class:`~baselines.llm.agents.prefix_cache.PrefixCacheDecoder` drops them, and
    :meth:`noisy` samples only the rows still going.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float, device) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        return self.noisy(scores, range(len(self.generators)))

    def noisy(self, scores: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        """Return the noisy logits of the batch rows that are generator ``rows`` (in order).

        A batch whose finished rows have left it passes the rows still going.
        """
        logits = scores.float() / self.temperature
        if self.top_p < 1.0:
            # Keep the smallest set of tokens whose probability reaches top_p
            # (the same rule as transformers' TopPLogitsWarper).
            ascending, order = torch.sort(logits, dim=-1)
            cumulative = ascending.softmax(dim=-1).cumsum(dim=-1)
            drop_sorted = cumulative <= 1.0 - self.top_p
            drop_sorted[..., -1] = False
            drop = drop_sorted.scatter(1, order, drop_sorted)
            logits = logits.masked_fill(drop, -math.inf)
        vocabulary = logits.shape[-1]
        noise = torch.stack(
            [
                torch.empty(vocabulary, device=logits.device).exponential_(
                    generator=self.generators[row]
                )
                for row in rows
            ]
        )
        # argmax(logits - log E), E ~ Exp(1), is a sample from softmax(logits).
        return logits - noise.log()


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack token-id lists into one left-padded batch: ``(input_ids, attention_mask)``.

    Left padding keeps every row's last token in the last column, where
    ``generate`` appends; HFAgent and the GRPO rollout batch prompts the same way.
    """
    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids) :] = 1
    return input_ids, attention_mask


def generate_replies(
    model: Any,
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    eos_ids: Sequence[int],
    max_new_tokens: int,
    sampler: LogitsProcessor | None = None,
    stop: Callable[[list[int]], bool] | None = None,
) -> list[list[int]]:
    """Left-pad ``prompts``, call ``model.generate`` once, return each row's new tokens.

    Decoding is greedy over ``sampler``'s noisy logits (a seeded sample), or
    plain greedy without one.  A row ends at an end token or once
    ``stop(its new tokens)`` is true (each row on its own); rows keep padding
    after that, so callers cut there.
    """
    input_ids, attention_mask = left_pad(prompts, pad_id)
    config = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        # Set explicitly so that the model's own sampling defaults (from its
        # generation_config.json) do not fill them in: decoding is greedy
        # over our processor's noisy logits, and greedy ignores these values.
        temperature=1.0,
        top_p=1.0,
        top_k=50,
        num_beams=1,
        pad_token_id=pad_id,
        eos_token_id=list(eos_ids),
    )
    with torch.inference_mode(), autocast_for(model):
        output = model.generate(
            input_ids=input_ids.to(model.device),
            attention_mask=attention_mask.to(model.device),
            generation_config=config,
            logits_processor=LogitsProcessorList([sampler] if sampler is not None else []),
            stopping_criteria=StoppingCriteriaList(
                [_RowStop(stop, input_ids.shape[1])] if stop is not None else []
            ),
        )
    return output[:, input_ids.shape[1] :].tolist()


class _RowStop(StoppingCriteria):
    """``generate``'s per-row stopping criterion from ``stop(new tokens) -> bool``."""

    def __init__(self, stop: Callable[[list[int]], bool], prompt_width: int) -> None:
        self.stop = stop
        self.prompt_width = prompt_width

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor, **kwargs) -> Any:
        rows = input_ids[:, self.prompt_width :].tolist()
        return torch.tensor([self.stop(row) for row in rows], device=input_ids.device)


@dataclass(frozen=True)
class Generation:
    """One reply: its tokens (up to and including the end token) and their log-probs."""

    token_ids: list[int]
    logprobs: list[float]


#: ``generate(episodes, prompts) -> one Generation per episode`` (an episode is
#: any object the generator can key a prefix cache and a sampling seed on).
Generate = Callable[[list[Any], list[list[int]]], list[Generation]]


class ReplySampling(Protocol):
    """How a training rollout samples its replies (``EpisodeRollout`` is one)."""

    max_new_tokens: int
    temperature: float

    def sampling_seed(self, episode: Any, prompt: list[int]) -> int:
        """Return the seed of ``episode``'s reply to ``prompt``."""
        ...


def reply_decoder(tokenizer: Any, eos_ids: Sequence[int]) -> Callable[[list[int]], str]:
    """Return ``decode(tokens)``: a reply's text as ``HFAgent`` decodes it (end token cut)."""
    eos = frozenset(eos_ids)

    def decode(tokens: list[int]) -> str:
        if tokens and tokens[-1] in eos:
            tokens = tokens[:-1]
        return tokenizer.decode(tokens, skip_special_tokens=True)

    return decode


class HFGenerator:
    """Generate one reply per episode with a transformers model, batched.

    It decodes once per batch of ``batch_size`` episodes (all at once by
    default) and records the sampled tokens' log-probabilities under
    ``softmax(logits / temperature)``, the distribution TRL's trainer scores
    them with.  With ``prefix_cache`` (the default) each episode's keys and
    values are kept between turns (:class:`~baselines.llm.agents.prefix_cache.
    PrefixCacheDecoder`); without it every turn left-pads the whole prompts
    and calls ``model.generate``.  Both sample the same tokens.

    ``rollout`` says how to sample (:class:`ReplySampling`): the reply length,
    the temperature and each reply's seed.  ``stop`` (for example a
    :class:`~baselines.llm.prompting.replies.ReplyStop`) ends a reply once its action
    line is complete, as ``HFAgent`` ends it; the stopping token is kept.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        rollout: ReplySampling,
        batch_size: int | None = None,
        prefix_cache: bool = True,
        stop: Callable[[list[int]], bool] | None = None,
    ) -> None:
        self.model = model
        self.rollout = rollout
        self.batch_size = batch_size
        self.stop = stop
        self.eos_ids = eos_token_ids(model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_ids[0]
        self.decoder = (
            PrefixCacheDecoder(model, self.eos_ids, rollout.max_new_tokens)
            if prefix_cache
            else None
        )

    def __call__(self, episodes: list[Any], prompts: list[list[int]]) -> list[Generation]:
        seeds = [self.rollout.sampling_seed(e, p) for e, p in zip(episodes, prompts, strict=True)]
        if self.decoder is not None:
            self.decoder.retain([id(e) for e in episodes])
        size = self.batch_size or len(prompts)
        # Similar lengths together waste little padding; the samples do not
        # depend on the grouping (each row has its own generator).
        order = sorted(range(len(prompts)), key=lambda row: len(prompts[row]))
        replies: list[Generation | None] = [None] * len(prompts)
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            batch = self._generate(
                [prompts[r] for r in rows], [seeds[r] for r in rows], [episodes[r] for r in rows]
            )
            for row, reply in zip(rows, batch, strict=True):
                replies[row] = reply
        return replies  # type: ignore[return-value]

    def _generate(
        self, prompts: list[list[int]], seeds: list[int], episodes: list[Any]
    ) -> list[Generation]:
        device = self.model.device
        sampler = _RecordingSampler(seeds, self.rollout.temperature, device)
        was_training = self.model.training
        self.model.eval()
        try:
            if self.decoder is not None:
                tokens = self.decoder(
                    [id(e) for e in episodes],
                    prompts,
                    lambda scores, rows: sampler.noisy(scores, rows).argmax(-1),
                    stop=self.stop,
                )
            else:
                tokens = generate_replies(
                    self.model,
                    prompts,
                    self.pad_id,
                    self.eos_ids,
                    self.rollout.max_new_tokens,
                    sampler,
                    stop=self.stop,
                )
        finally:
            self.model.train(was_training)
        replies = []
        for row, reply in enumerate(tokens):
            _, kept = reply_with_end(reply, self.eos_ids, self.stop)
            replies.append(Generation(kept, sampler.logprobs[row][: len(kept)]))
        return replies


class _RecordingSampler(GumbelSampler):
    """HFAgent's seeded sampler, which also records each sampled token's log-prob per row."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: Any) -> None:
        super().__init__(seeds, temperature, 1.0, device)
        self.logprobs: list[list[float]] = [[] for _ in seeds]

    def noisy(self, scores: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        noisy = super().noisy(scores, rows)
        chosen = noisy.argmax(dim=-1, keepdim=True)  # what greedy decoding will pick
        logps = (scores.float() / self.temperature).log_softmax(dim=-1)
        for row, logp in zip(rows, logps.gather(-1, chosen).squeeze(-1).tolist(), strict=True):
            self.logprobs[row].append(logp)
        return noisy


class VLLMGenerator:
    """Generate through the trainer's vLLM engine (``use_vllm=True``).  Untested here.

    Sampling follows the trainer's settings (``temperature``, ``top_p``,
    ``top_k``) and ``max_completion_length`` caps one reply, so set that to
    the rollout's ``max_new_tokens``.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer

    def __call__(self, episodes: list[Any], prompts: list[list[int]]) -> list[Generation]:
        _, completion_ids, logprobs, _ = self.trainer.vllm_generation.generate(
            prompts=prompts, images=None, num_generations=1
        )
        return [
            Generation(list(ids), [float(lp[0]) if lp and lp[0] is not None else 0.0 for lp in lps])
            for ids, lps in zip(completion_ids, logprobs, strict=True)
        ]
