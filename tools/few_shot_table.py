"""Print the table of few-shot examples that docs/real_llm.md shows, one row per family.

For the smallest id of each family: the first three examples ``few_shot=N``
shows (``few_shot=1`` shows the first, and so on), each as its task id
(``MAX_TASK_ID - k``), its oracle turns and its first moves.  Run from the repo
root: ``python tools/few_shot_table.py``.
"""

from __future__ import annotations

from agent_envs.core import MAX_TASK_ID
from baselines.llm.prompting.few_shot import oracle_episodes

#: The smallest id of each family (real_llm.md's families table, plus GuessNumber-20).
ENV_IDS = (
    "agent_envs/GuessNumber-v0",
    "agent_envs/GuessNumber-20-v0",
    "agent_envs/Sokoban-v0",
    "agent_envs/FrozenLake-v0",
    "agent_envs/Maze-5x5-v0",
    "agent_envs/Hanoi-3-v0",
    "agent_envs/Wordle-v0",
    "agent_envs/Household-Small-v0",
    "agent_envs/WebShop-v0",
    "agent_envs/KnowledgeSearch-v0",
)
_SHOWN_MOVES = 4


def rows(count: int = 3) -> list[str]:
    """Return the table's lines: a header, then one row per env of :data:`ENV_IDS`."""
    lines = ["| env | example 1 | example 2 | example 3 |", "|---|---|---|---|"]
    for env_id in ENV_IDS:
        cells = []
        for task_id, turns in oracle_episodes(env_id, count):
            moves = [action for _, action in turns]
            shown = ", ".join(moves[:_SHOWN_MOVES]) + (", ..." if len(moves) > _SHOWN_MOVES else "")
            cells.append(f"`MAX-{MAX_TASK_ID - task_id}`: {len(moves)} turns ({shown})")
        lines.append(f"| `{env_id.split('/')[1]}` | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(rows()))
