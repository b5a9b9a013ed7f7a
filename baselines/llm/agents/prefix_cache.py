"""Batched decoding that keeps each episode's keys and values from one turn to the next.

A multi-turn episode's prompt at turn t is its prompt at turn t-1, the reply
and the env's answer.  ``model.generate`` re-reads (prefills) the whole
dialogue every turn, so late turns cost attention over the whole history for
every live episode, and batching cannot save that compute.
:class:`PrefixCacheDecoder` keeps each episode's keys and values, so that a
turn runs only the tokens added since the last one (the last reply token and
the env's answer) and then decodes the reply.

Rows are packed, not padded.  Each forward pass runs the rows' new tokens
one after another as a single sequence (``[1, sum of the rows' new
tokens]``), with explicit position ids that number each row's tokens as in
its own sequence, so the linear layers compute no padding.  Attention is the
one step that must keep rows apart: while the decoder runs, the model's
attention implementation is swapped for :func:`_row_attention`, which
attends each row's queries to that row's own keys and values only (held in a
buffer per row, causal within its new tokens).  This suits decoder-only
models with a full (not sliding-window) cache that take ``position_ids`` and
dispatch attention through transformers' ``AttentionInterface`` (Llama,
Qwen2, Mistral without a sliding window, GPT-2, ...); a model that does not
dispatch through it is refused with an error rather than decoded wrongly.
The swap lasts one forward pass and is undone even when it fails, but it is
a setting of the model's config: do not run the same model from another
thread meanwhile.

A cache entry also holds the tokens it was computed from, and is used only
while they are a prefix of the row's prompt.  A row without one (a new
episode) starts from the longest prefix of its prompt that any other row's
entry holds, such as the system prompt and few-shot examples every episode
shares, and computes only the rest.  A decoder belongs to one rollout, during
which the weights do not change; :meth:`PrefixCacheDecoder.retain` drops the
rows that have ended.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from transformers import AttentionInterface

from baselines.llm.models.precision import autocast_for

__all__ = ["PrefixCacheDecoder", "cache_argument"]

#: ``sample(scores, rows) -> tokens``: one token per batch row from its last position's
#: logits; ``rows`` says which prompt each batch row is (finished rows have left).
Sample = Callable[[torch.Tensor, list[int]], torch.Tensor]

#: The name :func:`_row_attention` is registered under in transformers' ``AttentionInterface``.
ROW_ATTENTION = "agent_envs_rows"


def cache_argument(model: Any) -> str:
    """Return the keyword the model's forward takes its cache by.

    transformers 5.x renamed ``past_key_values`` to ``cache`` (the old name
    warns).  A peft model's own forward takes ``**kwargs``; its base model's
    names the cache.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


@dataclass(frozen=True)
class _RowCache:
    """One row's keys and values: ``kv[layer, 0 or 1, head, position, dim]`` for ``tokens``."""

    tokens: tuple[int, ...]
    kv: torch.Tensor


class PrefixCacheDecoder:
    """Decode one reply per row, reusing each row's cache from its previous call.

    Args:
        model: a transformers causal LM.
        eos_ids: the tokens that end a reply.
        max_new_tokens: the most tokens of one reply.
    """

    def __init__(self, model: Any, eos_ids: Sequence[int], max_new_tokens: int):
        self.model = model
        self._eos = frozenset(eos_ids)
        self.max_new_tokens = max_new_tokens
        self.layers = model.config.get_text_config().num_hidden_layers
        self._cache_argument = cache_argument(model)
        self._caches: dict[Any, _RowCache] = {}
        #: Rows computed by the decoding steps so far: one per reply token, since
        #: a finished row leaves the batch (``generate`` keeps decoding it).
        self.row_steps = 0
        #: Prompt tokens run through the model: each row's new ones, shared openings
        #: once.  Rows are packed, so no padding is ever computed.
        self.tokens_read = 0

    @torch.inference_mode()
    def __call__(
        self,
        keys: Sequence[Any],
        prompts: Sequence[Sequence[int]],
        sample: Sample,
        stop: Callable[[list[int]], bool] | None = None,
    ) -> list[list[int]]:
        """Return one reply per prompt: its tokens up to and including the end token.

        ``keys`` name the rows across calls (one per episode); ``sample(logits,
        rows)`` picks the next token of each listed row (indices into
        ``prompts``) from the logits of its last position.  A row ends, on its
        own, at an end token, once ``stop(its reply so far)`` is true or at
        ``max_new_tokens``, and leaves the batch at once: later steps compute
        only the rows still going, so :attr:`row_steps` grows by exactly one
        per reply token.
        """
        self._share_opening(keys, prompts)
        cached = [self._usable(key, prompt) for key, prompt in zip(keys, prompts, strict=True)]
        # A stop with its own cap (a bare-action ReplyStop) needs less room reserved.
        room = min(self.max_new_tokens, getattr(stop, "max_tokens", None) or self.max_new_tokens)
        rows = _Rows(self.model, self.layers, cached, [len(p) for p in prompts], room)
        new = [list(p[len(c.tokens) if c else 0 :]) for p, c in zip(prompts, cached, strict=True)]
        self.tokens_read += sum(map(len, new))
        replies: list[list[int]] = [[] for _ in prompts]
        live = list(range(len(prompts)))  # the prompt of each batch row, in order
        for step in range(room):
            with autocast_for(self.model):
                logits = self._forward(rows, new)
            self.row_steps += len(live)
            tokens = sample(logits, live).tolist()
            going = []
            for index, row in enumerate(live):
                replies[row].append(tokens[index])
                if self._ended(replies[row], stop) or step + 1 == room:
                    self._caches[keys[row]] = rows.entry(index, prompts[row], replies[row])
                else:
                    going.append(index)
            if not going:
                break
            rows.keep(going)
            live = [live[i] for i in going]
            new = [[tokens[i]] for i in going]
        return replies

    def _forward(self, rows: _Rows, new: list[list[int]]) -> torch.Tensor:
        """Run each row's ``new`` tokens after its cache; return the logits of each row's last."""
        ids = torch.tensor([[t for tokens in new for t in tokens]], device=self.device)
        with rows.attending(new) as positions:
            logits = self.model(
                input_ids=ids,
                position_ids=positions,
                **{self._cache_argument: rows},
                use_cache=True,
                logits_to_keep=rows.last_positions,
                decoding_rows=rows,
            ).logits
        return logits[0]

    def _ended(self, reply: list[int], stop: Callable[[list[int]], bool] | None) -> bool:
        return reply[-1] in self._eos or (stop is not None and stop(reply))

    def retain(self, keys: Sequence[Any]) -> None:
        """Drop the caches of every row not in ``keys`` (episodes that have ended)."""
        wanted = set(keys)
        self._caches = {key: entry for key, entry in self._caches.items() if key in wanted}

    @property
    def device(self) -> Any:
        return self.model.device

    def _usable(self, key: Any, prompt: Sequence[int]) -> _RowCache | None:
        entry = self._caches.get(key)
        if (
            entry is not None
            and len(entry.tokens) < len(prompt)
            and tuple(prompt[: len(entry.tokens)]) == entry.tokens
        ):
            return entry
        return self._shared_prefix(prompt)

    def _share_opening(self, keys: Sequence[Any], prompts: Sequence[Sequence[int]]) -> None:
        """Compute once the opening that the new rows of this call share (system prompt, examples).

        Rows with a usable cache of their own are left alone.  The opening is
        kept as one more entry, which :meth:`_shared_prefix` then hands to
        each new row, and which the next :meth:`retain` drops.
        """
        new = [prompt for key, prompt in zip(keys, prompts, strict=True) if key not in self._caches]
        if len(new) < 2:
            return
        length = min(_common_length(new[0], prompt) for prompt in new[1:])
        length = min(length, min(len(prompt) for prompt in new) - 1)
        if length < _MIN_OPENING:
            return
        opening = tuple(new[0][:length])
        if any(_common_length(e.tokens, opening) == length for e in self._caches.values()):
            return  # another row's cache already holds it
        self.tokens_read += length
        rows = _Rows(self.model, self.layers, [None], [length], 0)
        self._forward(rows, [list(opening)])
        self._caches[("opening", opening)] = _RowCache(opening, rows.buffers[0][..., :length, :])

    def _shared_prefix(self, prompt: Sequence[int]) -> _RowCache | None:
        """Return the longest start of ``prompt`` that another row's cache holds, or ``None``.

        Episodes of one run open alike (the system prompt, few-shot examples,
        often the same task statement), so a new episode's first turn reuses
        those keys and values instead of computing them again.  A key or
        value depends only on the tokens up to its position, so the prefix of
        another row's cache is exactly this row's.
        """
        head = tuple(prompt[:-1])  # at least one token is left to run
        best, length = None, 0
        for entry in self._caches.values():
            common = _common_length(entry.tokens, head)
            if common > length:
                best, length = entry, common
        if best is None:
            return None
        return _RowCache(best.tokens[:length], best.kv[..., :length, :])


#: Shared openings shorter than this are not worth a separate forward pass.
_MIN_OPENING = 16


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Return how many leading tokens ``a`` and ``b`` share."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


class _Rows:
    """The rows of one call: a key/value buffer per row, and the model's cache for its forwards.

    Each row's buffer (``[layers, 2, kv heads, capacity, head dim]``) starts
    with a copy of the row's cached keys and values and has room for its
    prompt's new tokens and ``room`` reply tokens, written in place.  The
    model calls :meth:`update` (as its cache) and then :func:`_row_attention`
    in every layer.
    """

    def __init__(self, model, layers: int, cached, prompt_lengths, room: int) -> None:
        self.model = model
        self.layers = layers
        self.filled = [len(entry.tokens) if entry else 0 for entry in cached]
        self.buffers: list[torch.Tensor | None] = []
        for entry, length in zip(cached, prompt_lengths, strict=True):
            if entry is None:
                self.buffers.append(None)  # shaped by the first update
                continue
            shape = (*entry.kv.shape[:3], length + room, entry.kv.shape[4])
            buffer = entry.kv.new_empty(shape)
            buffer[..., : len(entry.tokens), :] = entry.kv
            self.buffers.append(buffer)
        self.capacity = [length + room for length in prompt_lengths]
        self.attended = 0

    @contextmanager
    def attending(self, new: list[list[int]]) -> Iterator[torch.Tensor]:
        """Set up one forward over each row's ``new`` tokens; yield their position ids.

        Swaps the model's attention for :func:`_row_attention` meanwhile, and
        checks that every layer went through it.
        """
        device = self.model.device
        ends = list(itertools.accumulate(len(tokens) for tokens in new))
        self.segments = [(end - len(tokens), end) for tokens, end in zip(new, ends, strict=True)]
        self.last_positions = torch.tensor([end - 1 for end in ends], device=device)
        self.masks = [
            _causal_tail(len(tokens), filled, device) if len(tokens) > 1 else None
            for tokens, filled in zip(new, self.filled, strict=True)
        ]
        positions = torch.tensor(
            [[p for t, f in zip(new, self.filled, strict=True) for p in range(f, f + len(t))]],
            device=device,
        )
        config = self.model.config
        previous, config._attn_implementation = config._attn_implementation, ROW_ATTENTION
        self.attended = 0
        try:
            yield positions
        finally:
            config._attn_implementation = previous
        if self.attended != self.layers:
            raise RuntimeError(
                f"{type(self.model).__name__} ran {self.attended} of its {self.layers} layers' "
                "attention through transformers' AttentionInterface, so the prefix cache "
                "cannot keep its rows apart; pass prefix_cache=False."
            )
        self.filled = [f + len(tokens) for f, tokens in zip(self.filled, new, strict=True)]

    def update(self, keys: torch.Tensor, values: torch.Tensor, layer: int, *args, **kwargs):
        """Write each row's new keys and values (packed: ``[1, heads, tokens, dim]``) in place."""
        for row, (start, end) in enumerate(self.segments):
            buffer = self.buffers[row]
            if buffer is None:
                heads, dim = keys.shape[1], keys.shape[3]
                shape = (self.layers, 2, heads, self.capacity[row], dim)
                buffer = self.buffers[row] = keys.new_empty(shape)
            filled = self.filled[row]
            buffer[layer, 0, :, filled : filled + end - start] = keys[0, :, start:end]
            buffer[layer, 1, :, filled : filled + end - start] = values[0, :, start:end]
        return keys, values

    def attend(self, module: Any, query: torch.Tensor, scaling: float | None) -> torch.Tensor:
        """Attend each row's queries (packed ``[1, heads, tokens, dim]``) to its own keys."""
        self.attended += 1
        layer = module.layer_idx
        outputs = []
        for row, (start, end) in enumerate(self.segments):
            length = self.filled[row] + end - start
            kv = self.buffers[row][layer, :, :, :length]
            outputs.append(
                torch.nn.functional.scaled_dot_product_attention(
                    query[:, :, start:end],
                    kv[0].unsqueeze(0),
                    kv[1].unsqueeze(0),
                    attn_mask=self.masks[row],
                    scale=scaling,
                    enable_gqa=query.shape[1] != kv.shape[1],
                )
            )
        return torch.cat(outputs, dim=2).transpose(1, 2)

    def keep(self, rows: list[int]) -> None:
        """Keep only these rows (the others have finished); nothing is copied."""
        self.buffers = [self.buffers[row] for row in rows]
        self.filled = [self.filled[row] for row in rows]
        self.capacity = [self.capacity[row] for row in rows]

    def entry(self, row: int, prompt: Sequence[int], reply: list[int]) -> _RowCache:
        """Return ``row``'s cache: its prompt and the reply tokens fed back (not the last)."""
        fed = len(reply) - 1  # the last sampled token was never fed to the model
        tokens = (*prompt, *reply[:fed])
        return _RowCache(tokens, self.buffers[row][..., : len(tokens), :])


def _causal_tail(new: int, cached: int, device: Any) -> torch.Tensor:
    """Return the mask of ``new`` tokens after ``cached`` ones: each sees the cache and its past."""
    return torch.ones(new, cached + new, dtype=torch.bool, device=device).tril(cached)


def _row_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The attention function that keeps packed rows apart (see :class:`_Rows`)."""
    rows = kwargs.get("decoding_rows")
    if rows is None:
        raise RuntimeError(f"the {ROW_ATTENTION!r} attention runs only inside PrefixCacheDecoder")
    return rows.attend(module, query, scaling), None


AttentionInterface.register(ROW_ATTENTION, _row_attention)
