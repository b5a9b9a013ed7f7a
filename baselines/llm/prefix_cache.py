"""Batched decoding that keeps each episode's keys and values from one turn to the next.

A multi-turn episode's prompt at turn t is its prompt at turn t-1, the reply
and the env's answer.  ``model.generate`` re-reads (prefills) the whole
dialogue every turn, so late turns cost attention over the whole history for
every live episode, and batching cannot save that compute.
:class:`PrefixCacheDecoder` keeps each episode's keys and values, so that a
turn runs only the tokens added since the last one (the last reply token and
the env's answer) and then decodes the reply.

Rows of a batch hold caches of different lengths.  Each row's cache is
right-aligned behind left padding, and its new tokens are left-padded in the
new block: ``[pad | cache | pad | new]``.  An attention mask hides the padding
and explicit position ids number each row's tokens as in its own unpadded
sequence, so every row reads exactly its own sequence.  This suits
decoder-only models with a full (not sliding-window) dynamic cache and
``position_ids``: Llama, Qwen2, Mistral, GPT-2 and the like.

A cache entry also holds the tokens it was computed from, and is used only
while they are a prefix of the row's prompt.  A row without one (a new
episode) starts from the longest prefix of its prompt that any other row's
entry holds, such as the system prompt and few-shot examples every episode
shares, and computes only the rest.  A decoder belongs to one rollout, during which the weights do
not change; :meth:`PrefixCacheDecoder.retain` drops the rows that have ended.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

__all__ = ["PrefixCacheDecoder", "cache_argument"]

#: ``sample(scores, rows) -> tokens``: one token per batch row from its last position's
#: logits; ``rows`` says which prompt each batch row is (finished rows have left).
Sample = Callable[[torch.Tensor, list[int]], torch.Tensor]


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
    """One row's keys and values (per layer, ``[heads, len(tokens), head_dim]``)."""

    tokens: tuple[int, ...]
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]


class PrefixCacheDecoder:
    """Decode one reply per row, reusing each row's cache from its previous call.

    Args:
        model: a transformers causal LM.
        eos_ids: the tokens that end a reply.
        pad_id: the token that fills padding (never attended to).
        max_new_tokens: the most tokens of one reply.
    """

    def __init__(self, model: Any, eos_ids: Sequence[int], pad_id: int, max_new_tokens: int):
        self.model = model
        self._eos = frozenset(eos_ids)
        self.pad_id = pad_id
        self.max_new_tokens = max_new_tokens
        self.layers = model.config.get_text_config().num_hidden_layers
        self._cache_argument = cache_argument(model)
        self._caches: dict[Any, _RowCache] = {}
        #: Rows computed by the decoding steps so far: one per reply token, since
        #: a finished row leaves the batch (``generate`` keeps decoding it).
        self.row_steps = 0
        #: Prompt tokens run through the model (each row's new ones, shared openings
        #: once), and the same with the padding of each batch counted.
        self.tokens_read = 0
        self.padded_tokens_read = 0

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
        starts = [len(c.tokens) if c else 0 for c in cached]
        # A stop with its own cap (a bare-action ReplyStop) needs less room reserved.
        room = min(self.max_new_tokens, getattr(stop, "max_tokens", None) or self.max_new_tokens)
        batch = _Batch(prompts, starts, cached, self.pad_id, room, self.layers, self.device)
        self.tokens_read += sum(batch.new_lengths)
        self.padded_tokens_read += len(prompts) * batch.new_width
        replies: list[list[int]] = [[] for _ in prompts]
        live = list(range(len(prompts)))  # the prompt of each batch row, in order
        input_ids, positions = batch.input_ids, batch.positions
        for step in range(room):
            logits = self.model(
                input_ids=input_ids,
                attention_mask=batch.mask[:, : batch.width + step],
                position_ids=positions,
                **{self._cache_argument: batch.cache},
                use_cache=True,
                logits_to_keep=1,
            ).logits[:, -1, :]
            self.row_steps += len(live)
            tokens = sample(logits, live).cpu()
            going = []
            for index, row in enumerate(live):
                replies[row].append(int(tokens[index]))
                if self._ended(replies[row], stop) or step + 1 == room:
                    self._caches[keys[row]] = batch.row_cache(index, prompts[row], replies[row])
                else:
                    going.append(index)
            if not going:
                break
            if len(going) < len(live):  # finished rows leave the batch
                batch.keep(going)
                live, tokens, positions = [live[i] for i in going], tokens[going], positions[going]
            input_ids = tokens.to(self.device).unsqueeze(1)
            positions = positions[:, -1:] + 1
        return replies

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
        cache = DynamicCache()
        self.tokens_read += length
        self.padded_tokens_read += length
        self.model(
            input_ids=torch.tensor([opening], device=self.device),
            position_ids=torch.arange(length, device=self.device).unsqueeze(0),
            **{self._cache_argument: cache},
            use_cache=True,
            logits_to_keep=1,
        )
        layers = tuple((layer.keys[0], layer.values[0]) for layer in cache.layers)
        self._caches[("opening", opening)] = _RowCache(opening, layers)

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
        layers = tuple((keys[:, :length], values[:, :length]) for keys, values in best.layers)
        return _RowCache(best.tokens[:length], layers)


#: Shared openings shorter than this are not worth a separate forward pass.
_MIN_OPENING = 16


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Return how many leading tokens ``a`` and ``b`` share."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


class _Batch:
    """The padded tensors of one call: new tokens, positions, mask and the rows' caches."""

    def __init__(
        self, prompts, starts, cached, pad_id: int, max_new_tokens: int, layer_count: int, device
    ) -> None:
        rows = len(prompts)
        self.cached_width = max(starts)
        new = [list(prompt[start:]) for prompt, start in zip(prompts, starts, strict=True)]
        self.new_width = max(len(tokens) for tokens in new)
        self.width = self.cached_width + self.new_width
        self.new_lengths = [len(tokens) for tokens in new]
        self.starts = starts
        input_ids = torch.full((rows, self.new_width), pad_id, dtype=torch.long)
        positions = torch.zeros((rows, self.new_width), dtype=torch.long)
        mask = torch.zeros((rows, self.width + max_new_tokens), dtype=torch.long)
        for row, (tokens, start) in enumerate(zip(new, starts, strict=True)):
            first = self.new_width - len(tokens)
            input_ids[row, first:] = torch.tensor(tokens, dtype=torch.long)
            # Padding gets the row's first new position: any valid position
            # works, since no real token attends to it.
            positions[row] = start
            positions[row, first:] = torch.arange(start, start + len(tokens))
            mask[row, self.cached_width - start : self.cached_width] = 1
            mask[row, self.cached_width + first :] = 1  # new tokens, then the reply's
        self.input_ids = input_ids.to(device)
        self.positions = positions.to(device)
        self.mask = mask.to(device)
        self.cache = self._stack(cached, layer_count, self.new_width + max_new_tokens, device)

    def _stack(self, cached, layer_count: int, room: int, device) -> DynamicCache:
        cache = DynamicCache()
        cache.layers = [_ReservedLayer(self.cached_width + room) for _ in range(layer_count)]
        if self.cached_width == 0:
            return cache
        for index, layer in enumerate(cache.layers):
            key, value = next(c for c in cached if c is not None).layers[index]
            heads, _, dim = key.shape
            shape = (len(cached), heads, self.cached_width, dim)
            keys = torch.zeros(shape, dtype=key.dtype, device=device)
            values = torch.zeros(shape, dtype=value.dtype, device=device)
            for row, entry in enumerate(cached):
                if entry is not None:
                    length = len(entry.tokens)
                    keys[row, :, self.cached_width - length :] = entry.layers[index][0]
                    values[row, :, self.cached_width - length :] = entry.layers[index][1]
            layer.update(keys, values)
        return cache

    def keep(self, rows: list[int]) -> None:
        """Keep only these batch rows (the others have finished): mask, offsets and caches."""
        index = torch.tensor(rows, dtype=torch.long, device=self.mask.device)
        self.mask = self.mask.index_select(0, index)
        self.starts = [self.starts[row] for row in rows]
        self.new_lengths = [self.new_lengths[row] for row in rows]
        for layer in self.cache.layers:
            layer.keep(index)

    def row_cache(self, row: int, prompt: Sequence[int], reply: list[int]) -> _RowCache:
        """Return batch ``row``'s cache: its prompt and the reply tokens fed back (not the last)."""
        start, length = self.starts[row], self.new_lengths[row]
        fed = len(reply) - 1  # the last sampled token was never fed to the model
        begin = self.cached_width - start
        new_begin, new_end = self.width - length, self.width + fed
        layers = []
        for layer in self.cache.layers:
            keys, values = layer.keys[row], layer.values[row]
            layers.append(
                (
                    torch.cat([keys[:, begin : self.cached_width], keys[:, new_begin:new_end]], 1),
                    torch.cat(
                        [values[:, begin : self.cached_width], values[:, new_begin:new_end]], 1
                    ),
                )
            )
        return _RowCache((*prompt, *reply[:fed]), tuple(layers))


class _ReservedLayer(DynamicLayer):
    """A dynamic cache layer that writes into room reserved up front.

    ``DynamicLayer`` concatenates on every update, copying the whole cache for
    each decoded token; here a call's tokens are written in place, and
    ``keys``/``values`` are views of the filled part.
    """

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self._buffers: tuple[torch.Tensor, torch.Tensor] | None = None
        self._length = 0

    def update(self, key_states, value_states, *args, **kwargs):
        if self._buffers is None:
            self.lazy_initialization(key_states, value_states)
            rows, heads, _, dim = key_states.shape
            shape = (rows, heads, self.capacity, dim)
            self._buffers = (key_states.new_zeros(shape), value_states.new_zeros(shape))
        end = self._length + key_states.shape[-2]
        if end > self.capacity:
            raise RuntimeError(f"the reserved cache holds {self.capacity} tokens, not {end}")
        keys, values = self._buffers
        keys[:, :, self._length : end] = key_states
        values[:, :, self._length : end] = value_states
        self._length = end
        self.keys, self.values = keys[:, :, :end], values[:, :, :end]
        return self.keys, self.values

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the batch rows in ``index`` (the filled part is copied; room stays)."""
        if self._buffers is None:
            return
        self._buffers = tuple(buffer.index_select(0, index) for buffer in self._buffers)
        keys, values = self._buffers
        self.keys, self.values = keys[:, :, : self._length], values[:, :, : self._length]
