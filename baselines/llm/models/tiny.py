"""A tiny causal LM built offline for one env: a byte-level BPE tokenizer and a small Llama.

``agent-envs train-llm`` uses it when no ``--model`` is given, and the LLM
BudgetMix study trains it from scratch.  Nothing is downloaded: the tokenizer
is trained here on texts of the env itself (noisy-oracle episodes, the system
prompt, replies in the ``Action: <action>`` format), so the prompts of that env
take few tokens, and any string still round-trips exactly (byte-level BPE).
Digits are single tokens.

The model is a Llama (rotary positions).  Rotary positions matter for GRPO:
TRL's trainer left-pads prompts and passes no ``position_ids``, which a model
with absolute positions (GPT-2) scores several nats off on padded rows, while
a rotary model sees only relative offsets and scores them exactly.

Needs the ``[llm]`` extra and ``tokenizers`` (installed with transformers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

import agent_envs  # noqa: F401  (registers the env ids)
from baselines.llm.prompting.replies import DEFAULT_SYSTEM_PROMPT, format_reply
from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED, ORACLE_ACTIONS, TASK_ID, TURN

__all__ = ["CHAT_TEMPLATE", "TINY_CONFIG", "build_tiny_model", "env_corpus"]

#: The model's shape: about 0.1 M parameters (115 k with all 512 tokens of the vocabulary; the
#: tokenizer learns fewer on a small env: 441 on GuessNumber, 110 k parameters).
TINY_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 1024,
}
#: A ChatML template (as Qwen's), without a default system prompt.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def env_corpus(env_id: str, episodes: int = 64, turns: int = 20) -> list[str]:
    """Return texts an agent of ``env_id`` reads and writes, from noisy-oracle episodes."""
    from baselines.simple_agents import NoisyOracleAgent

    env = gym.make(env_id).unwrapped
    agent = NoisyOracleAgent(epsilon=0.3, seed=0)
    texts = [DEFAULT_SYSTEM_PROMPT]
    for episode in range(episodes):
        observation, _ = env.reset(seed=episode, options={TASK_ID: episode})
        texts.append(observation)
        for turn in range(turns):
            info = {
                EPISODE_SEED: episode,
                TURN: turn,
                ADMISSIBLE_ACTIONS: env.admissible_actions(),
                ORACLE_ACTIONS: env.oracle_actions(),
            }
            action = agent.act(observation, info)
            texts.append(format_reply(action))
            observation, _, terminated, _, _ = env.step(action)
            texts.append(observation)
            if terminated:
                break
    return texts


def build_tiny_model(
    folder: str | Path,
    env_id: str,
    seed: int = 0,
    vocab_size: int = 512,
    context: int = TINY_CONFIG["max_position_embeddings"],
) -> Path:
    """Train the tokenizer, build a randomly initialised model, save both in ``folder``.

    ``context`` is the model's context length in tokens (rotary positions add
    no weights, so it costs nothing until used); an episode whose dialogue
    outgrows it ends with ``end_reason="context"``.  Returns ``folder``, which
    ``AutoModelForCausalLM.from_pretrained`` and ``HFAgent(folder)`` then
    load.  The same ``(env_id, seed, context)`` gives the same model.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(folder)
    tokenizer = _train_tokenizer(env_id, vocab_size)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        **{**TINY_CONFIG, "max_position_embeddings": context},
    )
    # Fork the RNG so that building the model leaves torch's global stream alone.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path)
    return path


def _train_tokenizer(env_id: str, vocab_size: int) -> Any:
    """Return a byte-level BPE tokenizer trained on ``env_id``'s texts (one token per digit)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    # One token per digit, as Qwen and Llama 3 do: a number then has a single
    # tokenization.  It was chosen when the rollout re-tokenised replies; the
    # rollout now keeps the sampled tokens (baselines.llm.training.rollout), so
    # an episode stays one sequence whatever the tokenizer.
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(env_corpus(env_id), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        padding_side="left",
    )
