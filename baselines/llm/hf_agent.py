"""HFAgent: any Hugging Face causal language model as an agent_envs policy.

Needs the ``[llm]`` extra (torch and transformers).  Importing this module
imports both; importing :mod:`baselines` does not.

How a turn goes:

1. The prompt is the dialogue in ``info["messages"]`` (from
   ``wrappers.ChatHistory``) or else the observation alone, with the system
   prompt first (see :func:`baselines.llm.prompting.build_messages`).  It is
   rendered with the tokenizer's chat template, or with the plain format of
   :func:`baselines.llm.prompting.plain_prompt` when there is none.  If it would
   not leave room for ``max_new_tokens`` in the model's context, the oldest
   exchanges are dropped; the system prompt, the task statement and the latest
   exchange (last action and current observation) are always kept.
2. ``act_batch`` left-pads all live episodes and generates them with one
   ``model.generate`` call per micro-batch of ``batch_size`` (longest prompts
   batched together, to waste little padding).
3. The action is parsed out of the generation by
   :func:`baselines.llm.prompting.parse_action`; the generation itself is kept
   as ``AgentAction.raw`` for the transcript.

Sampling and seeds.  ``temperature=0`` is greedy decoding, which is
deterministic.  Otherwise every generation gets its own ``torch.Generator``
seeded from (``seed``, ``info["episode_seed"]``, the turn, the prompt), see
:func:`baselines.llm.prompting.derive_seed`.  The evaluator gives every attempt
a different ``episode_seed``, so the K attempts of Pass@K draw independent
samples, and a rerun draws the same ones.  Sampling is the Gumbel-max trick:
per-row exponential noise is added to the temperature- and top-p-processed
logits and the token is the arg-max, which is an exact sample from that
distribution.  Because each row owns its noise, what an episode samples does
not depend on which other episodes share its batch, nor on ``batch_size``:
batch 1 and batch 32 give the same actions wherever the model's logits are
themselves batch-invariant (as they are in fp32 on CPU; on GPUs, kernels
chosen by batch shape may change logits in the last bits and so, rarely, flip
a near-tie).  Without ``episode_seed`` (outside the evaluator) the agent
draws episode seeds from its own generator seeded with ``seed``.

This module changes no global torch setting (threads, seeds, defaults).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from agent_envs import install_hint
from agent_envs.fingerprint import folder_fingerprint
from agent_envs.protocol import EPISODE_SEED

try:
    import torch
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        GenerationConfig,
        LogitsProcessor,
        LogitsProcessorList,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"HFAgent needs torch and transformers: {install_hint('llm')}.") from error

from agent_envs.protocol import AgentAction
from baselines.llm.prefix_cache import PrefixCacheDecoder
from baselines.llm.prompting import (
    DEFAULT_SYSTEM_PROMPT,
    PromptEncoder,
    PromptTooLongError,
    check_sampling,
    derive_seed,
    to_agent_action,
    turn_of,
)
from wrappers.validators import check_bool, check_int

__all__ = ["HFAgent", "PromptTooLongError"]

_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
}
# Model configs name their context length differently.
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length")


class _GumbelSampler(LogitsProcessor):
    """Turn greedy decoding into seeded, per-row sampling (the Gumbel-max trick).

    Each row has its own generator, so a row's samples do not depend on the
    other rows in the batch.  Rows that have already finished still draw
    noise; their tokens are discarded by ``generate``.
    """

    def __init__(self, seeds: Sequence[int], temperature: float, top_p: float, device) -> None:
        self.temperature = temperature
        self.top_p = top_p
        self.generators = [torch.Generator(device=device).manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
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
                torch.empty(vocabulary, device=logits.device).exponential_(generator=generator)
                for generator in self.generators
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
) -> list[list[int]]:
    """Left-pad ``prompts``, call ``model.generate`` once, return each row's new tokens.

    Decoding is greedy over ``sampler``'s noisy logits (a seeded sample), or
    plain greedy without one.  Rows keep their tokens after the end token;
    callers cut there.
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
    with torch.inference_mode():
        output = model.generate(
            input_ids=input_ids.to(model.device),
            attention_mask=attention_mask.to(model.device),
            generation_config=config,
            logits_processor=LogitsProcessorList([sampler] if sampler is not None else []),
        )
    return output[:, input_ids.shape[1] :].tolist()


class HFAgent:
    """Act with a Hugging Face causal LM, one ``generate`` call per micro-batch.

    Args:
        model: a local folder or hub name, loaded with
            ``AutoModelForCausalLM.from_pretrained``, or an already-loaded model
            (then ``tokenizer`` is required).
        tokenizer: a tokenizer, or its folder or hub name; by default the
            model's.
        system_prompt: put first in every prompt (``None`` for none); a system
            message from ``wrappers.ChatHistory`` takes its place.
        temperature: ``0`` for greedy decoding, else the sampling temperature.
        top_p: nucleus sampling threshold in ``(0, 1]``.
        max_new_tokens: the most tokens generated per turn.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...; by default CUDA when
            available (a loaded model stays where it is).
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``, ``"auto"`` (the
            checkpoint's) or a ``torch.dtype``; by default float32 on CPU and
            ``"auto"`` elsewhere.
        batch_size: the most episodes per ``generate`` call.
        seed: the agent's seed, mixed into every sampling seed.
        max_context: the context length in tokens; by default read from the
            model config.
        trust_remote_code: passed to ``from_pretrained``; off by default
            because it runs code from the model repository.
        prefix_cache: keep each episode's keys and values from one turn to
            the next (:mod:`baselines.llm.prefix_cache`), so that a turn runs
            only the tokens added since the last one.  The prompts and the
            samples are the same; multi-turn episodes with a history generate
            several times faster.  Off by default: it needs a decoder-only
            model that takes ``position_ids`` and a full dynamic cache (Llama,
            Qwen2, Mistral without a sliding window, GPT-2, ...).

    Example::

        agent = HFAgent("Qwen/Qwen2.5-0.5B-Instruct", temperature=0.7, batch_size=32)
        action = agent.act(observation, info)   # an AgentAction; action.raw is the generation
    """

    budget_aware = False

    def __init__(
        self,
        model: Any,
        *,
        tokenizer: Any = None,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 256,
        device: str | None = None,
        dtype: Any = None,
        batch_size: int = 8,
        seed: int = 0,
        max_context: int | None = None,
        trust_remote_code: bool = False,
        prefix_cache: bool = False,
    ) -> None:
        check_sampling(temperature, top_p, max_new_tokens, "max_new_tokens")
        check_int(batch_size, "batch_size", 1)
        check_int(seed, "seed")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise TypeError(f"system_prompt must be a str or None, got {system_prompt!r}.")
        check_bool(trust_remote_code, "trust_remote_code")
        check_bool(prefix_cache, "prefix_cache")
        self.system_prompt = system_prompt
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.seed = seed
        self.model, self.tokenizer, self.name = _load(
            model, tokenizer, device, dtype, trust_remote_code
        )
        self.model.eval()
        self.max_context = _context_length(self.model, self.tokenizer, max_context)
        if self.max_context is not None and self.max_context <= max_new_tokens:
            raise ValueError(
                f"max_new_tokens ({max_new_tokens}) leaves no room for a prompt in the "
                f"model's context of {self.max_context} tokens."
            )
        self._eos_ids = _eos_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else self._eos_ids[0]
        #: Builds every prompt; the GRPO rollout builds its prompts with the same class.
        self.prompts = PromptEncoder(
            self.tokenizer, system_prompt, self.max_context, max_new_tokens
        )
        self._episode_rng = np.random.default_rng(seed)
        #: Tokens generated so far (up to and including the end-of-sequence token).
        self.generated_tokens = 0
        self._decoder = (
            PrefixCacheDecoder(self.model, self._eos_ids, self._pad_id, max_new_tokens)
            if prefix_cache
            else None
        )

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """A hash of the model folder's weights, config and tokenizer files (``None`` otherwise).

        The evaluator adds it to the agent's recorded name, so that a model
        retrained into the same folder never resumes the old model's run log.
        """
        return folder_fingerprint(self.name) if os.path.isdir(self.name) else None

    def __repr__(self) -> str:
        return (
            f"HFAgent(model={self.name!r}, temperature={self.temperature}, top_p={self.top_p}, "
            f"max_new_tokens={self.max_new_tokens}, batch_size={self.batch_size}, seed={self.seed})"
        )

    # ---------------------------------------------------------------- acting
    def act(self, observation: str, info: dict[str, Any]) -> AgentAction:
        """Return the action for one episode (a batch of one)."""
        return self.act_batch([observation], [info])[0]

    def act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[AgentAction]:
        """Return one action per episode, generating in micro-batches of ``batch_size``."""
        if len(observations) != len(infos):
            raise ValueError(
                f"act_batch got {len(observations)} observations but {len(infos)} infos."
            )
        prompts = [
            self.prompt_ids(obs, info) for obs, info in zip(observations, infos, strict=True)
        ]
        seeds = [self._sample_seed(info, ids) for info, ids in zip(infos, prompts, strict=True)]
        # Batching similar lengths together wastes little padding; the results
        # do not depend on the grouping.
        order = sorted(range(len(prompts)), key=lambda row: len(prompts[row]))
        keys = [_episode_key(info, row) for row, info in enumerate(infos)]
        if self._decoder is not None:
            self._decoder.retain(keys)
        generations: list[str] = [""] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            texts = self._generate(
                [prompts[row] for row in rows],
                [seeds[row] for row in rows],
                [keys[row] for row in rows],
            )
            for row, text in zip(rows, texts, strict=True):
                generations[row] = text
        return [to_agent_action(text) for text in generations]

    # --------------------------------------------------------------- prompts
    def prompt_ids(self, observation: str, info: dict[str, Any]) -> list[int]:
        """Return the token ids of the prompt for one episode, trimmed to fit the context."""
        return self.prompts.prompt_ids(observation, info)

    def _sample_seed(self, info: dict[str, Any], prompt: list[int]) -> int:
        episode_seed = info.get(EPISODE_SEED)
        if episode_seed is None:
            episode_seed = int(self._episode_rng.integers(2**62))
        prompt_key = ",".join(map(str, prompt))
        return derive_seed(self.seed, episode_seed, turn_of(info), prompt_key)

    # ------------------------------------------------------------ generation
    def _generate(self, prompts: list[list[int]], seeds: list[int], keys: list) -> list[str]:
        device = self.model.device
        sampler = (
            _GumbelSampler(seeds, self.temperature, self.top_p, device)
            if self.temperature > 0
            else None
        )
        if self._decoder is not None:
            new_tokens = self._decoder(
                keys,
                prompts,
                lambda s: (s if sampler is None else sampler(None, s)).argmax(-1),
            )
        else:
            new_tokens = generate_replies(
                self.model, prompts, self._pad_id, self._eos_ids, self.max_new_tokens, sampler
            )
        texts = []
        for tokens in new_tokens:
            end = next(
                (index for index, token in enumerate(tokens) if token in self._eos_ids),
                len(tokens),
            )
            self.generated_tokens += min(end + 1, len(tokens))
            texts.append(self.tokenizer.decode(tokens[:end], skip_special_tokens=True))
        return texts


def _episode_key(info: dict[str, Any], row: int) -> Any:
    """Name an episode across turns for the prefix cache: its seed, or the row of this call.

    A cache is used only while it is a prefix of the prompt, so a key that
    names another episode costs a prefill, never a wrong reply.
    """
    seed = info.get(EPISODE_SEED)
    return ("episode", seed) if seed is not None else ("row", row)


def _load(model: Any, tokenizer: Any, device: str | None, dtype: Any, trust_remote_code: bool):
    """Return ``(model, tokenizer, name)``, loading whatever was given by name."""
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got {device!r}.")
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = AutoTokenizer.from_pretrained(
            os.fspath(tokenizer), padding_side="left", trust_remote_code=trust_remote_code
        )
    if isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        torch_dtype = _dtype(dtype, device)
        if tokenizer is None:
            tokenizer = AutoTokenizer.from_pretrained(
                name, padding_side="left", trust_remote_code=trust_remote_code
            )
        loaded = AutoModelForCausalLM.from_pretrained(
            name, dtype=torch_dtype, trust_remote_code=trust_remote_code
        )
        return loaded.to(device), tokenizer, name
    if not callable(getattr(model, "generate", None)):
        raise TypeError(
            "model must be a folder, a hub name or a loaded transformers model with "
            f"generate(), got {type(model).__name__}."
        )
    if tokenizer is None:
        raise TypeError("Pass tokenizer=... together with an already-loaded model.")
    if device is not None:
        model = model.to(device)
    if dtype is not None and dtype != "auto":
        model = model.to(_dtype(dtype, str(model.device)))
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
    return model, tokenizer, name


def _dtype(dtype: Any, device: str) -> Any:
    if dtype is None:
        return torch.float32 if device == "cpu" else "auto"
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    if isinstance(dtype, str) and dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(f"dtype must be one of {[*_DTYPES, 'auto']} or a torch.dtype, got {dtype!r}.")


def _context_length(model: Any, tokenizer: Any, override: int | None) -> int | None:
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


def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
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
