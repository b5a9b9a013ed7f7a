"""A tiny corridor env for the classic-RL tests: fast to step, trivial to learn.

It is a full :class:`agent_envs.TextEnv`, so the wrappers and the SB3 agent
meet the same interface as on real families, yet PPO learns it in seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agent_envs.core import TextEnv

__all__ = ["CorridorEnv", "RandomPolicy", "word_tokenizer"]

_MOVES = {"left": -1, "right": 1, "l": -1, "r": 1}


class CorridorEnv(TextEnv[tuple[int, int]]):
    """Walk along a corridor ``#...@..G#`` to the goal ``G``.

    Cells ``0..length-1``; the task fixes the start and the goal.  Actions are
    ``left`` and ``right``; walking into the wall is invalid.  With
    ``hole=True`` cell 0 is a hole ``O`` (never the start or the goal) that
    ends the episode as a failure: a dead end.
    """

    action_vocabulary = ("left", "right", "wait")
    action_format = "Reply with left or right."
    max_action_length = 32

    def __init__(self, length: int = 8, hole: bool = False, render_mode: str | None = None):
        self.length = length
        self.hole = hole
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator) -> tuple[int, int]:
        low = 1 if self.hole else 0
        start, goal = rng.choice(np.arange(low, self.length), size=2, replace=False)
        return int(start), int(goal)

    def _start(self, task: tuple[int, int]) -> None:
        self._position = task[0]

    def _intro(self) -> str:
        return f"Reach G. {self.action_format}"

    def _view(self) -> str:
        cells = ["."] * self.length
        if self.hole:
            cells[0] = "O"
        cells[self.task[1]] = "G"
        cells[self._position] = "@"
        return "#" + "".join(cells) + "#"

    def _parse(self, action: str) -> Any | None:
        return _MOVES.get(action)

    def _apply(self, move: int) -> tuple[str, bool]:
        target = self._position + move
        if not 0 <= target < self.length:
            return "You bump into the wall.", False
        self._position = target
        return "You move.", True

    def _is_success(self) -> bool:
        return self._position == self.task[1]

    def _is_failure(self) -> bool:
        return self.hole and self._position == 0

    def admissible_actions(self) -> list[str]:
        """Moves that stay inside the corridor (``wait`` is never admissible)."""
        return [
            name
            for name, step in (("left", -1), ("right", 1))
            if 0 <= self._position + step < self.length
        ]

    def oracle_actions(self) -> list[str]:
        if self._success or self._is_failure():
            return []
        return ["left" if self.task[1] < self._position else "right"]

    def oracle_turns(self) -> int | None:
        if self._is_failure():
            return None
        return abs(self.task[1] - self._position)


class RandomPolicy:
    """Pick a uniform admissible action, seeded by the episode and the turn."""

    required_info = ("admissible_actions",)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        rng = np.random.default_rng([info["episode_seed"] % 2**63, info.get("turn", 0)])
        actions = info["admissible_actions"]
        return actions[int(rng.integers(len(actions)))]


def word_tokenizer(folder: Any) -> tuple[str, int]:
    """Save a tiny word-level tokenizer in ``folder``; return its path and vocabulary size.

    It is a local ``"tokens"``-mode tokenizer: nothing is downloaded.  Needs transformers.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]"])
    words.train_from_iterator(["the secret is higher", "the secret is lower"], trainer)
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]").save_pretrained(folder)
    return str(folder), len(words.get_vocab())
