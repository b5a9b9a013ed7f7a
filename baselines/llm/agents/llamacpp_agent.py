"""LlamaCppAgent: a GGUF model run natively by llama.cpp (``llama-cpp-python``) on the CPU.

transformers must dequantise a GGUF file to float32 before it can run it
(about 28 s for SmolLM2-135M, once; then a cached HF folder); llama.cpp runs
the quantised file as it is and loads it in a fraction of a second.

Prompts are :class:`~baselines.llm.agents.hf_agent.HFAgent`'s as it renders them
from text: the
same :class:`~baselines.llm.prompting.prompt_encoder.PromptEncoder`, reply formats, few-shot
examples (:class:`~baselines.llm.prompting.few_shot.PromptStyle`) and stopping, with
the tokenizer that transformers reads from the GGUF file's own metadata.  Every
turn is rendered from the dialogue's text; ``HFAgent`` continues a
``record="raw"`` dialogue from the reply's sampled tokens instead, which
differs only where those are not the tokenizer's own split of the reply.  The
agent hands llama.cpp token ids, never text, so its tokenizer is not used.

Generation is one episode at a time: llama.cpp's high-level API holds one
sequence.  After each reply the agent copies that sequence's keys and values
out of llama.cpp (``llama_state_seq_get_data``: the cells in use, not the
whole context) and keys them by the episode's seed; the episode's next turn
copies them back (``llama_state_seq_set_data``), so llama.cpp reads only the
tokens added since, however many other episodes ran in between.  A new
episode starts from whatever the context holds, which is the longest prefix
it shares with the previous prompt: the system prompt and the few-shot
examples every episode shares are computed once.  ``act_batch`` drops the
states of the episodes it is no longer given (they have ended).

Seeds.  ``temperature=0`` is greedy.  Otherwise each reply's sampler is seeded
with :func:`wrappers.utils.seeding.sampling_seed` of the agent's seed, the
episode seed, the turn and the prompt, as in ``HFAgent``; the samples differ
from ``HFAgent``'s (another sampler, quantised weights) but a rerun repeats
them and the K attempts of Pass@K stay independent.

Needs ``llama-cpp-python`` (the ``[smollm2]`` extra, which builds llama.cpp
from source) and transformers with ``gguf`` (for the tokenizer).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import weakref
from collections.abc import Iterator
from typing import Any

from agent_envs import install_hint
from agent_envs.protocol import AgentAction
from baselines.llm.agents.policy import LLMAgent
from baselines.llm.models.resolve import gguf_file
from baselines.llm.prompting.prompt_encoder import PromptEncoder
from baselines.llm.prompting.replies import ReplyStop, to_agent_action, with_tokens
from wrappers.errors import InvalidValue
from wrappers.protocol import EPISODE_SEED
from wrappers.utils.validators import check_bool, check_int

__all__ = ["LlamaCppAgent", "gguf_tokenizer"]


def gguf_tokenizer(path: str | os.PathLike[str]) -> Any:
    """Return the transformers tokenizer stored in a GGUF file's metadata (left padding).

    It reads no weights, so it is quick even for a large file.
    """
    from transformers import AutoTokenizer

    path = os.fspath(path)
    return AutoTokenizer.from_pretrained(
        os.path.dirname(path) or ".",
        gguf_file=os.path.basename(path),
        local_files_only=True,
        padding_side="left",
    )


@contextlib.contextmanager
def _model_params(**fields: Any) -> Iterator[None]:
    """Make ``Llama()`` load its model with these ``llama_model_params`` fields set.

    ``Llama`` takes no argument for them: it fills its model parameters from
    ``llama_cpp.llama_model_default_params()``, so that function is wrapped
    while one model loads.
    """
    import llama_cpp.llama as module

    default = module.llama_cpp.llama_model_default_params

    def params() -> Any:
        value = default()
        for name, setting in fields.items():
            setattr(value, name, setting)
        return value

    module.llama_cpp.llama_model_default_params = params
    try:
        yield
    finally:
        module.llama_cpp.llama_model_default_params = default


def _llama_class() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError:
        raise ImportError(
            "LlamaCppAgent needs llama-cpp-python, which pip builds from source: "
            f"{install_hint('smollm2')}, or pip install llama-cpp-python."
        ) from None
    return Llama


class LlamaCppAgent(LLMAgent):
    """Act with a GGUF model through llama.cpp, one episode at a time.

    Args:
        model: a ``.gguf`` file or a short name such as ``"smollm2-135m"``
            (:mod:`baselines.llm.models.resolve`); nothing is downloaded.
        system_prompt, few_shot, reply_format, env_id, temperature, top_p,
            max_new_tokens, seed: the prompt style and the sampling, as
            ``HFAgent``'s (:class:`~baselines.llm.agents.policy.LLMPolicy`);
            ``seed`` also seeds llama.cpp.
        max_context: llama.cpp's context in tokens; by default the model's.
        threads: CPU threads for llama.cpp, for reading prompts and for
            decoding; 1 by default, as ``HFAgent``'s (on 2 busy cores a
            second thread mostly waits: reading prompts with both cores cost
            6.6x the CPU of one).  ``None``: llama-cpp-python's choice, half
            the cores to decode and all of them to read prompts.
        repack: let llama.cpp repack the weights into its extra CPU buffer
            types (AMX, AVX repacking).  Off by default: on a CPU that reports
            AMX but whose kernel does not let a process use it (as in some
            virtual machines, including this project's), the AMX matrix
            product crashes the process with a segmentation fault.

    Example::

        agent = LlamaCppAgent("smollm2-135m", few_shot=1, temperature=0)
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "smollm2-135m",
        *,
        max_context: int | None = None,
        threads: int | None = 1,
        repack: bool = False,
        **settings: Any,
    ) -> None:
        super().__init__(**settings)
        if threads is not None:
            check_int(threads, "threads", 1)
        path = gguf_file(model)
        llama = _llama_class()
        self.name = os.fspath(model)
        self.tokenizer = gguf_tokenizer(path)
        context = 0 if max_context is None else check_int(max_context, "max_context", 2)
        with _model_params(use_extra_bufts=check_bool(repack, "repack")):
            # One count for both: llama-cpp-python reads prompts with every
            # core (``n_threads_batch``) whatever ``n_threads`` says.
            self.llm = llama(
                model_path=str(path),
                n_ctx=context,
                n_threads=threads,
                n_threads_batch=threads,
                seed=self.seed,
                verbose=False,
            )
        # Free llama.cpp's memory before interpreter shutdown tears its bindings down.
        weakref.finalize(self, self.llm.close)
        self.max_context = self.llm.n_ctx()
        if self.max_context <= self.max_new_tokens:
            raise InvalidValue(
                f"max_new_tokens ({self.max_new_tokens}) leaves no room for a prompt in the "
                f"context of {self.max_context} tokens."
            )
        self._eos_ids = {self.llm.token_eos(), self.tokenizer.eos_token_id} - {None, -1}
        self._encoders: dict[str | None, PromptEncoder] = {}
        self.stop = ReplyStop(self.tokenizer, self.style.reply_format)
        #: Tokens generated so far (up to and including the end-of-sequence token).
        self.generated_tokens = 0
        #: Prompt tokens llama.cpp has read so far (those not already in its cache).
        self.tokens_read = 0
        self._states = _EpisodeStates(self.llm)

    def _act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[AgentAction]:
        """Return one action per episode, generating them one after another."""
        self._states.retain(info.get(EPISODE_SEED) for info in infos)
        actions = []
        for observation, info in zip(observations, infos, strict=True):
            prompt = self.prompt_ids(observation, info)
            seed = self.policy.sample_seed(info, prompt)
            before = self.generated_tokens
            reply = self._reply(prompt, seed, info.get(EPISODE_SEED))
            actions.append(
                with_tokens(to_agent_action(reply), len(prompt), self.generated_tokens - before)
            )
        return actions

    def prompt_ids(self, observation: str, info: dict[str, Any]) -> list[int]:
        """Return the prompt's token ids, as ``HFAgent`` builds them."""
        env_id = self.style.example_env(info)
        if env_id not in self._encoders:
            self._encoders[env_id] = PromptEncoder(
                self.tokenizer,
                self.style.system_prompt,
                self.max_context,
                self.max_new_tokens,
                self.style.examples(info),
            )
        return self._encoders[env_id].prompt_ids(observation, info)

    def _reply(self, prompt: list[int], seed: int, key: Any) -> str:
        """Decode one reply until an end token, a complete action line or the length limit.

        ``key`` names the episode whose cached state is restored first and
        saved after (``None``: nothing is kept).
        """
        if key is not None:
            self._states.restore(key, prompt)
        # llama.cpp keeps what its context holds of the prompt (all but the last token).
        self.tokens_read += len(prompt) - _common_length(_held(self.llm), prompt[:-1])
        self.llm.set_seed(seed)
        tokens: list[int] = []
        sampling = {"top_k": 0, "min_p": 0.0, "top_p": self.top_p, "repeat_penalty": 1.0}
        for token in self.llm.generate(prompt, temp=self.temperature, **sampling):
            self.generated_tokens += 1
            if token in self._eos_ids:
                break
            tokens.append(int(token))
            if len(tokens) >= self.max_new_tokens or self.stop(tokens):
                break
        if key is not None:
            self._states.save(key)
        return self.tokenizer.decode(tokens, skip_special_tokens=True)


class _EpisodeStates:
    """Each live episode's llama.cpp sequence state (its keys and values), between turns.

    The state of sequence 0 is copied with llama.cpp's per-sequence state API,
    which copies the cells in use only; ``Llama.save_state`` would also copy
    the logits buffer (``n_batch x vocabulary`` floats, 100 MB for SmolLM2).
    Alongside it the tokens the cells hold, which ``Llama.generate`` compares
    with the next prompt to skip the prefix it already holds.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self._states: dict[Any, tuple[tuple[int, ...], bytes]] = {}

    def retain(self, keys: Any) -> None:
        """Drop the states of episodes not in ``keys``."""
        wanted = set(keys)
        self._states = {key: state for key, state in self._states.items() if key in wanted}

    def save(self, key: Any) -> None:
        import llama_cpp

        ctx = self.llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0)
        tokens = tuple(int(token) for token in _held(self.llm))
        self._states[key] = (tokens, bytes(buffer)[:written])

    def restore(self, key: Any, prompt: list[int]) -> None:
        """Load ``key``'s state if it holds more of ``prompt`` than the context does now."""
        entry = self._states.get(key)
        if entry is None:
            return
        tokens, data = entry
        # At least the prompt's last token is read, for its logits.
        shared = _common_length(tokens, prompt[:-1])
        if shared <= _common_length(_held(self.llm), prompt[:-1]):
            return
        import llama_cpp

        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(self.llm._ctx.ctx, buffer, len(data), 0) == 0:
            self.llm.reset()  # not restored: llama.cpp reads the prompt whole
            return
        # Declare held only the cells the prompt shares; llama.cpp drops the
        # rest (positions from ``n_tokens`` on) before it reads the remainder.
        self.llm.n_tokens = shared
        self.llm.input_ids[:shared] = tokens[:shared]


def _held(llm: Any) -> Any:
    """Return the tokens whose keys and values llama.cpp's context holds.

    ``Llama.input_ids`` is a buffer of the context's length; only its first
    ``n_tokens`` entries are in the cache.  The rest are left over from
    longer prompts and must never be matched against a new one: a match there
    makes llama.cpp continue from positions its cache does not have
    (``llama_decode returned -1``).
    """
    return llm.input_ids[: llm.n_tokens]


def _common_length(a: Any, b: Any) -> int:
    """Return how many leading tokens ``a`` and ``b`` share."""
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))
