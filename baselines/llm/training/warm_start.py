"""A supervised warm start: fine-tune on noisy-oracle episodes in the training prompt format.

A randomly initialised model never succeeds, so every GRPO group scores 0
and nothing trains; the paper starts from a pretrained instruct model
instead.  This module stands in for that: it plays ``NoisyOracleAgent``
episodes (its random mistakes and the oracle's recoveries included) through
the very machinery the GRPO rollout uses (:func:`baselines.llm.training.rollout.play_episodes`
with the same env stack and prompt encoder), so each transcript is one
sequence of exactly the prompts the model will see, and fine-tunes on the
assistant tokens only with TRL's ``SFTTrainer`` (``assistant_masks``).

Each reply is the action in the rollout's reply format followed by the end
token (:func:`baselines.llm.prompting.replies.format_action`): ``"Action: <action>"``
for ``"think"``, the bare action for ``"action"``.

:func:`run_warm_start` is ``train-llm``'s warm-start phase: both steps, with
the warm start's share of the run's settings.

Needs the ``[rl]`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baselines.llm.agents.generation import Generation, eos_token_ids, reply_decoder
from baselines.llm.prompting.replies import format_action
from baselines.llm.training.rollout import Episode, EpisodeRollout
from baselines.simple_agents import NoisyOracleAgent
from wrappers.protocol import ADMISSIBLE_ACTIONS, EPISODE_SEED, ORACLE_ACTIONS, TURN

if TYPE_CHECKING:
    from baselines.llm.training.train_config import WarmStartSettings

__all__ = ["OracleReplies", "demonstrations", "run_warm_start", "warm_start"]


class OracleReplies:
    """A stand-in for the model: ``NoisyOracleAgent``'s action, tokenized as a reply.

    It reads the oracle and the admissible actions off each episode's env and
    seeds the agent's draws with the episode seed and turn, as the evaluator
    does, so demonstrations are reproducible.
    """

    def __init__(
        self, tokenizer: Any, eos_id: int, epsilon: float, seed: int, reply_format: str = "think"
    ) -> None:
        self.tokenizer = tokenizer
        self.eos_id = eos_id
        self.reply_format = reply_format
        self.agent = NoisyOracleAgent(epsilon=epsilon, seed=seed)

    def __call__(self, episodes: list[Episode], prompts: list[list[int]]) -> list[Generation]:
        replies = []
        for episode in episodes:
            base = episode.env.unwrapped
            info = {
                EPISODE_SEED: episode.episode_seed,
                TURN: episode.turns,
                ADMISSIBLE_ACTIONS: base.admissible_actions(),
                ORACLE_ACTIONS: base.oracle_actions(),
            }
            action = self.agent.act(episode.observation, info)
            text = format_action(action, self.reply_format)
            ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], self.eos_id]
            replies.append(Generation(ids, [0.0] * len(ids)))
        return replies


def demonstrations(
    model: Any,
    tokenizer: Any,
    rollout: EpisodeRollout,
    task_ids: Sequence[int],
    episodes_per_task: int,
    epsilon: float = 0.25,
) -> list[dict[str, list[int]]]:
    """Return noisy-oracle transcripts as ``{"input_ids", "assistant_masks"}`` rows.

    ``rollout`` supplies the env, the budget spec, the system prompt and the
    seeds, exactly as in GRPO; ``model`` only tells the context length and
    the end tokens.  An episode that ends for ``"context"`` keeps what it
    played up to there (one that played nothing gives no row).
    """
    chat = rollout.chat_tokens(model, tokenizer)
    eos_ids = eos_token_ids(model, tokenizer)
    generate = OracleReplies(
        tokenizer, eos_ids[0], epsilon, rollout.seed, rollout.style.reply_format
    )
    decode = reply_decoder(tokenizer, eos_ids)
    tasks = [task for task in task_ids for _ in range(episodes_per_task)]
    episodes = rollout.run(tasks, chat, generate, decode)
    return [
        {
            "input_ids": episode.prompt_ids + episode.completion_ids,
            "assistant_masks": [0] * len(episode.prompt_ids) + episode.env_mask,
        }
        for episode in episodes
        if episode.completion_ids
    ]


def warm_start(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, list[int]]],
    steps: int,
    *,
    learning_rate: float = 1e-2,
    batch_size: int = 16,
    seed: int = 0,
    output_dir: str = "warm-start",
    log_every: int = 50,
) -> Any:
    """Fine-tune ``model`` on ``rows`` for ``steps`` optimizer steps; return the model.

    The loss covers the assistant tokens only (``assistant_masks``).  The
    config overrides TRL's defaults that break CPU runs (``bf16`` and
    activation checkpointing default to True) and saves nothing.
    """
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from baselines.llm.training.grpo import no_checkpointing

    if steps < 1:
        return model
    config = SFTConfig(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=max(steps // 20, 1),
        bf16=False,
        **no_checkpointing(),
        report_to="none",
        dataloader_pin_memory=False,  # a CPU has no pinned memory; True only warns
        save_strategy="no",
        logging_steps=log_every,
        seed=seed,
        max_length=None,
        dataset_num_proc=None,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    trainer.remove_callback(PrinterCallback)  # the caller prints its own log
    trainer.train()
    return trainer.model


def run_warm_start(
    model: Any,
    tokenizer: Any,
    rollout: EpisodeRollout,
    settings: WarmStartSettings,
    work: Path,
    log: Callable[[str], None],
) -> Any:
    """Fine-tune on noisy-oracle transcripts of the training tasks; return the model.

    ``rollout`` plays the transcripts as GRPO will play its episodes;
    ``work`` is the trainer's scratch folder.
    """
    rows = demonstrations(
        model, tokenizer, rollout, settings.tasks, settings.episodes, settings.epsilon
    )
    log(f"warm start: {len(rows)} noisy-oracle episodes, {settings.steps} steps")
    return warm_start(
        model,
        tokenizer,
        rows,
        settings.steps,
        learning_rate=settings.learning_rate,
        seed=settings.seed,
        output_dir=str(work),
    )
