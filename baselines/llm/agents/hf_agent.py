"""HFAgent: any Hugging Face causal language model as an agent_envs policy.

Needs the ``[llm]`` extra (torch and transformers).  Importing this module
imports both; importing :mod:`baselines` does not.

How a turn goes:

1. The prompt is the dialogue in ``info["messages"]`` (from
   ``wrappers.ChatHistory``) or else the observation alone, with the system
   prompt first (see :func:`baselines.llm.prompting.messages.build_messages`).  The
   first turn's is rendered with the tokenizer's chat template, or with the
   plain format of :func:`baselines.llm.prompting.messages.plain_prompt` when there is
   none.  Later turns are token-level, as in GRPO training
   (:class:`baselines.llm.prompting.chat_tokens.TokenHistory`): the previous prompt, the
   reply's tokens as sampled and the template's delta for the env's answer,
   whenever the dialogue continues the previous turn's
   (``ChatHistory(record="raw")`` without a sliding window).  Otherwise, and
   when the token prompt would not leave room for ``max_new_tokens`` in the
   model's context, the dialogue is rendered from text, the oldest exchanges
   dropped until it fits; the system prompt, the task statement and the latest
   exchange (last action and current observation) are always kept.
2. ``act_batch`` generates all live episodes, a micro-batch of
   ``batch_size`` at a time (similar prompt lengths together).  With the
   prefix cache (the default) a micro-batch's new tokens run packed into one
   sequence (:mod:`baselines.llm.agents.prefix_cache`); without it, each
   micro-batch is one left-padded ``model.generate`` call.
3. The action is parsed out of the generation by
   :func:`baselines.llm.prompting.replies.parse_action`; the generation itself is kept
   as ``AgentAction.raw`` for the transcript.

Sampling and seeds.  ``temperature=0`` is greedy decoding, which is
deterministic.  Otherwise every generation gets its own ``torch.Generator``
seeded from (``seed``, ``info["episode_seed"]``, the turn, the prompt), see
:func:`wrappers.utils.seeding.sampling_seed`.  The evaluator gives every attempt
a different ``episode_seed``, so the K attempts of Pass@K draw independent
samples, and a rerun draws the same ones.  Sampling is the Gumbel-max trick
(:class:`baselines.llm.agents.generation.GumbelSampler`, shared with GRPO training):
per-row exponential noise is added to the temperature- and top-p-processed
logits and the token is the arg-max, which is an exact sample from that
distribution.  Because each row owns its noise, what an episode samples does
not depend on which other episodes share its batch, nor on ``batch_size``:
batch 1 and batch 32 give the same actions wherever the model's logits are
themselves batch-invariant (as they are in fp32 on CPU; on GPUs, kernels
chosen by batch shape may change logits in the last bits and so, rarely, flip
a near-tie).  Without ``episode_seed`` (outside the evaluator) the agent
draws episode seeds from its own generator seeded with ``seed``.

Threads.  torch's thread count is process-wide; the agent sets it to
``threads`` (1 by default, see the argument) and changes no other global
torch setting (seeds, defaults).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from agent_envs import install_hint
from agent_envs.fingerprint import folder_fingerprint
from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED

try:
    import torch
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"HFAgent needs torch and transformers: {install_hint('llm')}.") from error

from agent_envs.protocol import AgentAction
from baselines.llm.agents.generation import (
    GumbelSampler,
    context_length,
    eos_token_ids,
    generate_replies,
)
from baselines.llm.agents.policy import LLMAgent
from baselines.llm.agents.prefix_cache import PrefixCacheDecoder
from baselines.llm.models.hf_loading import load_for_inference
from baselines.llm.models.resolve import resolve_model
from baselines.llm.prompting.chat_tokens import ChatTokens, TokenHistory
from baselines.llm.prompting.few_shot import oracle_episodes
from baselines.llm.prompting.hf_tools import (
    ToolPromptEncoder,
    check_tool_template,
    message_from_text,
)
from baselines.llm.prompting.messages import turn_of
from baselines.llm.prompting.prompt_encoder import PromptEncoder, PromptTooLongError
from baselines.llm.prompting.replies import (
    ReplyStop,
    reply_with_end,
    to_agent_action,
    with_tokens,
)
from baselines.llm.prompting.tool_messages import example_turns, record_reply, tool_settings
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_bool, check_int

__all__ = ["HFAgent", "PromptTooLongError"]


def _room_for_replies(
    model: Any, tokenizer: Any, max_context: int | None, max_new: int
) -> int | None:
    """Return the model's context length, refusing one that leaves no room for a prompt."""
    context = context_length(model, tokenizer, max_context)
    if context is not None and context <= max_new:
        raise InvalidValue(
            f"max_new_tokens ({max_new}) leaves no room for a prompt in the "
            f"model's context of {context} tokens."
        )
    return context


class HFAgent(LLMAgent):
    """Act with a Hugging Face causal LM, decoding a micro-batch of episodes at a time.

    Args:
        model: a local HF folder, a ``.gguf`` file or a short name such as
            ``"smollm2-135m"`` (see :mod:`baselines.llm.models.resolve`; nothing is
            downloaded), loaded with ``AutoModelForCausalLM.from_pretrained``,
            or an already-loaded model (then ``tokenizer`` is required).
        tokenizer: a tokenizer, or its folder; by default the model's.
        system_prompt, few_shot, reply_format, env_id, temperature, top_p,
            max_new_tokens, seed: the prompt style and the sampling, passed
            through to the :class:`~baselines.llm.agents.policy.LLMPolicy` the
            agent holds, which describes them.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...; by default CUDA when
            available (a loaded model stays where it is).
        dtype: ``"float32"``, ``"bfloat16"``, ``"float16"``, ``"auto"`` or a
            ``torch.dtype``; by default float32 on CPU and ``"auto"``
            elsewhere.  ``"auto"`` is, on a CPU, bfloat16 where the CPU
            computes it natively and float32 where not; on a GPU, the
            checkpoint's own.  A bfloat16 model on a CPU runs under bfloat16
            autocast (:mod:`baselines.llm.models.precision`), as training does.
            A loaded model keeps its dtype unless a dtype other than
            ``"auto"`` is given.
        batch_size: the most episodes per ``generate`` call.
        max_context: the context length in tokens; by default read from the
            model config.
        trust_remote_code: passed to ``from_pretrained``; off by default
            because it runs code from the model repository.
        prefix_cache: keep each episode's keys and values from one turn to
            the next (:mod:`baselines.llm.agents.prefix_cache`), so that a turn runs
            only the tokens added since the last one.  The prompts and the
            samples are the same; multi-turn episodes with a history generate
            several times faster, and the rows are packed without padding.
            On by default; it needs a decoder-only model that takes
            ``position_ids``, keeps a full (not sliding-window) cache and
            dispatches attention through transformers' ``AttentionInterface``
            (Llama, Qwen2, Mistral without a sliding window, GPT-2, ...).  A
            model that does not dispatch through it is refused (a
            ``RuntimeError`` at its first reply); the other two needs are not
            checked, so turn it off for such models.
        threads: ``torch.set_num_threads(threads)`` for the process (torch's
            intra-op threads are process-wide); ``None`` leaves torch's own
            setting.  1 by default: on this project's 2-core machine one thread
            evaluated SmolLM2-135M fastest (``benchmarks/real_llm_speed.py
            --threads 1,2``; docs/real_llm.md), and a second thread on busy
            cores spins instead of computing.
        tool_calls: play through the function ``act``, as
            ``OpenAIChatAgent(tool_calls=True)`` does: the tool-native
            dialogue (:mod:`baselines.llm.prompting.tool_messages`) rendered by the
            chat template with ``tools=[act]``, and the move read from the
            calls the reply writes (:mod:`baselines.llm.prompting.hf_tools`).  A
            template that ignores tools (SmolLM2-135M-Instruct's) is refused.
            Each prompt is rendered from the dialogue's text (no token-level
            history), and a reply ends at an end token or ``max_new_tokens``.

    Example::

        agent = HFAgent("smollm2-135m", temperature=0.7, batch_size=32)
        action = agent.act(observation, info)   # an AgentAction; action.raw is the generation
    """

    shown_before_seed = ("batch_size",)

    def __init__(
        self,
        model: Any,
        *,
        tokenizer: Any = None,
        device: str | None = None,
        dtype: Any = None,
        batch_size: int = 8,
        max_context: int | None = None,
        trust_remote_code: bool = False,
        prefix_cache: bool = True,
        threads: int | None = 1,
        tool_calls: bool = False,
        **settings: Any,
    ) -> None:
        self.tool_calls = check_bool(tool_calls, "tool_calls")
        super().__init__(**tool_settings(settings, tool_calls))
        self.batch_size = check_int(batch_size, "batch_size", 1)
        check_bool(trust_remote_code, "trust_remote_code")
        check_bool(prefix_cache, "prefix_cache")
        _set_threads(threads)
        self._from_files = isinstance(model, (str, os.PathLike))
        self.model, self.tokenizer, self.name = load_for_inference(
            model, tokenizer, device, dtype, trust_remote_code
        )
        self.model.eval()
        self.max_context = _room_for_replies(
            self.model, self.tokenizer, max_context, self.max_new_tokens
        )
        self._eos_ids = eos_token_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else self._eos_ids[0]
        self._setup_prompts()
        #: Tokens generated so far (up to and including the end-of-sequence token).
        self.generated_tokens = self._generate_row_steps = 0
        decoder = PrefixCacheDecoder(self.model, self._eos_ids, self.max_new_tokens)
        self._decoder = decoder if prefix_cache else None  # a cheap object either way

    def _setup_prompts(self) -> None:
        """Build the prompt builders and the reply's stop, for text or tool mode."""
        if self.tool_calls:
            check_tool_template(self.tokenizer)
            self.required_info = (*self.required_info, ADMISSIBLE_ACTIONS)  # the tool's enum
        #: Builds every prompt; the GRPO rollout builds its prompts with the same class.
        self.prompts = self._new_encoder(())
        # One prompt builder and one token history per env with examples.
        self._encoders: dict[str, PromptEncoder] = {}
        self._histories: dict[str | None, TokenHistory] = {}
        #: Ends a reply as soon as its action line is complete (a call has no action line).
        self.stop = None if self.tool_calls else ReplyStop(self.tokenizer, self.style.reply_format)

    def _new_encoder(self, examples: Any) -> PromptEncoder:
        encoder = ToolPromptEncoder if self.tool_calls else PromptEncoder
        return encoder(
            self.tokenizer, self.system_prompt, self.max_context, self.max_new_tokens, examples
        )

    @property
    def decoded_row_steps(self) -> int:
        """Rows the decoding steps computed so far, against :attr:`generated_tokens` needed.

        With the prefix cache a finished row leaves its batch, so the two are
        equal; ``model.generate`` (``prefix_cache=False``) decodes every row
        of a batch until its last row ends.
        """
        # ``_generate_row_steps``: the rows ``model.generate`` decoded (no prefix cache).
        cached = self._decoder.row_steps if self._decoder is not None else 0
        return cached + self._generate_row_steps

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """A hash of the model folder's weights, config and tokenizer files (``None`` otherwise).

        The evaluator adds it to the agent's recorded name, so that a model
        retrained into the same folder never resumes the old model's run log.
        """
        if not self._from_files:
            return None  # a model in memory: its files, if any, may differ from it
        folder = resolve_model(self.name)  # the folder it was loaded from (cached)
        return folder_fingerprint(folder) if os.path.isdir(folder) else None

    # ---------------------------------------------------------------- acting
    def _act_batch(self, observations: list[str], infos: list[dict[str, Any]]) -> list[AgentAction]:
        """Return one action per episode, generating in micro-batches of ``batch_size``."""
        keys = [_episode_key(info, row) for row, info in enumerate(infos)]
        for history in self._histories.values():
            history.retain(keys)
        if self._decoder is not None:
            self._decoder.retain(keys)
        prompts = [
            self.prompt_ids(obs, info, key)
            for obs, info, key in zip(observations, infos, keys, strict=True)
        ]
        seed = self.policy.sample_seed
        seeds = [seed(info, ids) for info, ids in zip(infos, prompts, strict=True)]
        # Batching similar lengths together wastes little padding; the results
        # do not depend on the grouping.
        order = sorted(range(len(prompts)), key=lambda row: len(prompts[row]))
        generations: list[str] = [""] * len(prompts)
        generated = [0] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            replies = self._generate(
                [prompts[row] for row in rows],
                [seeds[row] for row in rows],
                [keys[row] for row in rows],
            )
            for row, (tokens, text) in zip(rows, replies, strict=True):
                generations[row] = text
                generated[row] = len(tokens)
                self._history(infos[row]).record(keys[row], tokens, text)
        if self.tool_calls:
            actions = [
                record_reply(message_from_text(text), turn_of(info))
                for text, info in zip(generations, infos, strict=True)
            ]
        else:
            actions = [to_agent_action(text) for text in generations]
        return [
            with_tokens(action, len(prompt), count)
            for action, prompt, count in zip(actions, prompts, generated, strict=True)
        ]

    # --------------------------------------------------------------- prompts
    def prompt_ids(self, observation: str, info: dict[str, Any], key: Any = None) -> list[int]:
        """Return the token ids of the prompt for one episode, trimmed to fit the context.

        With ``key`` (naming the episode across turns) the prompt continues
        that episode's tokens (see the module docstring); without it the
        dialogue is rendered from text.  Few-shot examples come first.
        """
        if key is None or self.tool_calls:  # tool mode renders every turn from text
            return self._encoder(info).prompt_ids(observation, info)
        return self._history(info).prompt_ids(key, observation, info)

    def _encoder(self, info: dict[str, Any]) -> PromptEncoder:
        """Return the prompt builder with this episode's few-shot examples (if any)."""
        env_id = self.style.example_env(info)
        if env_id is None:
            return self.prompts
        if env_id not in self._encoders:
            examples = (
                example_turns(oracle_episodes(env_id, self.style.few_shot))
                if self.tool_calls
                else self.style.examples(info)
            )
            self._encoders[env_id] = self._new_encoder(examples)
        return self._encoders[env_id]

    def _history(self, info: dict[str, Any]) -> TokenHistory:
        """Return the token history of the episodes that share this one's prompt builder."""
        env_id = self.style.example_env(info)
        if env_id not in self._histories:
            self._histories[env_id] = TokenHistory(ChatTokens(self._encoder(info), self._eos_ids))
        return self._histories[env_id]

    # ------------------------------------------------------------ generation
    def _generate(
        self, prompts: list[list[int]], seeds: list[int], keys: list
    ) -> list[tuple[list[int], str]]:
        """Return each row's reply: its tokens (end token included) and its text."""
        device = self.model.device
        sampler = (
            GumbelSampler(seeds, self.temperature, self.top_p, device)
            if self.temperature > 0
            else None
        )
        if self._decoder is not None:
            new_tokens = self._decoder(
                keys,
                prompts,
                lambda scores, rows: (
                    scores if sampler is None else sampler.noisy(scores, rows)
                ).argmax(-1),
                stop=self.stop,
            )
        else:
            new_tokens = generate_replies(
                self.model,
                prompts,
                self._pad_id,
                self._eos_ids,
                self.max_new_tokens,
                sampler,
                stop=self.stop,
            )
            self._generate_row_steps += len(prompts) * max(map(len, new_tokens))
        replies = []
        for tokens in new_tokens:
            # The token history keeps the end token when the reply ended with one.
            reply, kept = reply_with_end(tokens, self._eos_ids, self.stop)
            self.generated_tokens += len(kept)
            replies.append((kept, self.tokenizer.decode(reply, skip_special_tokens=True)))
        return replies


def _set_threads(threads: int | None) -> None:
    """Set torch's (process-wide) thread count, unless ``threads`` is ``None``."""
    if threads is not None:
        torch.set_num_threads(check_int(threads, "threads", 1))


def _episode_key(info: dict[str, Any], row: int) -> Any:
    """Name an episode across turns (token history, prefix cache): its seed, or its row.

    A token history is continued only when the dialogue continues its own
    (see :class:`baselines.llm.prompting.chat_tokens.TokenHistory`), and a cache is used
    only while it is a prefix of the prompt, so a key that names another
    episode costs a re-rendered prompt or a prefill, never a wrong reply.
    """
    seed = info.get(EPISODE_SEED)
    return ("episode", seed) if seed is not None else ("row", row)
