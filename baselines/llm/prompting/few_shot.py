"""Few-shot examples: episodes the env's oracle plays, shown as earlier turns of the chat.

A small instruct model ignores a bare instruction ("reply with the action
only") but follows a worked example.  Every env here has an exact oracle, so
the examples write themselves: :func:`example_messages` plays ``count``
episodes with the oracle and renders them as chat turns (each observation a
``user`` message, each oracle action an ``assistant`` reply written in the
agent's own reply format), to be put before the real episode's dialogue.

Which tasks.  Examples come only from the :data:`EXAMPLE_POOL` task ids at the
top of the id space, ``MAX_TASK_ID - 1`` downwards (see
:func:`example_task_ids`).  Evaluation and training count task ids from 0, so
an example *id* is never evaluated or trained on (:func:`check_not_example`).
Ids are not instances, though: GuessNumber-20 has 20 secrets, and three of the
pool's ids build secret 5.  So the examples are distinct *instances*
(:func:`agent_envs.instances.instance_key`), and an agent with examples
refuses a task whose instance is one of its examples'
(:meth:`PromptStyle.check_tasks`): a model must never be shown the episode it
is scored or trained on.

How they are chosen: typical games, not the easiest.  The pool's tasks are
ranked by how far their oracle turns lie from the pool's median (the
``median_low``), ties by id (highest first), and the first ``count`` distinct
instances the oracle solves are used (a slippery episode it fails is
skipped).  Shortest-first, the earlier rule, showed the trivial games only:
on GuessNumber-20 one two-turn game (secret 5) three times.

What they show.  Only what the agent itself sees: the observations of the
registered env and the actions.  Where the oracle is privileged (Maze's map,
Household's object locations, WebShop's target), the example shows its
actions, never what it knew; the agent sees a route that happens to be
straight.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from agent_envs.core import EXAMPLE_POOL, FIRST_EXAMPLE_ID, MAX_TASK_ID
from agent_envs.instances import instance_key
from baselines.llm.prompting.replies import (
    FORMAT_PROMPT,
    choose_reply_format,
    format_action,
    system_prompt_for,
)
from wrappers.errors import InvalidType, InvalidValue
from wrappers.protocol import ENV_ID, SUCCESS, TASK_ID, Oracle
from wrappers.utils.validators import check_int

__all__ = [
    "EXAMPLE_POOL",
    "FIRST_EXAMPLE_ID",
    "Episode",
    "PromptStyle",
    "check_not_example",
    "check_not_example_instance",
    "example_instances",
    "example_messages",
    "example_task_ids",
    "oracle_episodes",
]

# One turn per oracle step, with room for slides on slippery ice.
_TURN_FACTOR, _TURN_SLACK = 4, 8


def example_task_ids() -> list[int]:
    """Return the reserved example task ids, highest first.

    >>> example_task_ids()[:2]
    [2147483646, 2147483645]
    """
    return list(range(MAX_TASK_ID - 1, FIRST_EXAMPLE_ID - 1, -1))


def check_not_example(task_ids: Iterable[int]) -> None:
    """Raise ``ValueError`` if a task id is reserved for few-shot examples."""
    reserved = sorted({int(t) for t in task_ids if int(t) >= FIRST_EXAMPLE_ID})
    if reserved:
        raise InvalidValue(
            f"task ids {reserved[:3]} are reserved for few-shot examples (ids >= "
            f"{FIRST_EXAMPLE_ID}); evaluate and train on lower ids."
        )


#: One example: its task id and its turns, ``((observation, action), ...)``.
Episode = tuple[int, tuple[tuple[str, str], ...]]


@functools.cache
def oracle_episodes(env_id: str, count: int) -> tuple[Episode, ...]:
    """Return ``count`` oracle episodes of ``env_id``: ``(task_id, ((observation, action), ...))``.

    The tasks are distinct instances of typical length (see the module
    docstring).  Each episode lists the observation the agent sees before
    each oracle action; the final observation (after the last action) is left
    out, so an example ends with the move that solved it.  Cached per process.

    Raises:
        ValueError: the env has no oracle, or fewer than ``count`` distinct
            instances of the reserved tasks were solved.
    """
    check_int(count, "few_shot", 0, EXAMPLE_POOL)
    env = gym.make(env_id)
    base = env.unwrapped
    if not isinstance(base, Oracle):
        raise InvalidValue(f"{env_id} has no oracle_actions(), so it has no few-shot examples.")
    lengths = []
    for task_id in example_task_ids():
        env.reset(seed=0, options={TASK_ID: task_id})
        lengths.append(base.oracle_turns())
    solvable = [turns for turns in lengths if turns is not None]
    median = statistics.median_low(solvable) if solvable else 0
    ranked = sorted(
        (abs(turns - median), index, task_id, turns)
        for index, (task_id, turns) in enumerate(zip(example_task_ids(), lengths, strict=True))
        if turns is not None
    )
    episodes: list[Episode] = []
    shown: set[str] = set()
    for _, _, task_id, turns in ranked:
        if len(episodes) == count:
            break
        key = instance_key(env_id, task_id)
        if key in shown:
            continue
        episode = _play(env, task_id, _TURN_FACTOR * min(turns, 64) + _TURN_SLACK)
        if episode is not None:
            episodes.append((task_id, episode))
            shown.add(key)
    env.close()
    if len(episodes) < count:
        raise InvalidValue(
            f"the oracle solved only {len(episodes)} distinct example instances of {env_id}."
        )
    return tuple(episodes)


@functools.cache
def example_instances(env_id: str, count: int) -> dict[str, int]:
    """Return ``{instance key: example task id}`` of the ``count`` examples of ``env_id``."""
    return {instance_key(env_id, task_id): task_id for task_id, _ in oracle_episodes(env_id, count)}


def check_not_example_instance(env_id: str, count: int, task_ids: Iterable[int]) -> None:
    """Raise ``ValueError`` (one line) if a task of ``task_ids`` is an example's instance.

    Also refuses the reserved example ids themselves (:func:`check_not_example`).
    """
    task_ids = [int(t) for t in task_ids]
    check_not_example(task_ids)
    if not count:
        return
    examples = example_instances(env_id, count)
    for task_id in dict.fromkeys(task_ids):
        shown = examples.get(instance_key(env_id, task_id))
        if shown is not None:
            raise InvalidValue(
                f"task {task_id} of {env_id} is the same instance as few-shot example task "
                f"{shown}: a model must not be shown the episode it is scored or trained on; "
                "use tasks of other instances (agent_envs.instances.instance_key) or no examples."
            )


def _play(env: gym.Env, task_id: int, max_turns: int) -> tuple[tuple[str, str], ...] | None:
    """Return one oracle episode on ``task_id``, or ``None`` if it fails within ``max_turns``."""
    observation, _ = env.reset(seed=0, options={TASK_ID: task_id})
    turns = []
    for _ in range(max_turns):
        actions = env.unwrapped.oracle_actions()
        if not actions:
            return None
        turns.append((observation, actions[0]))
        observation, _, terminated, truncated, info = env.step(actions[0])
        if info.get(SUCCESS):
            return tuple(turns)
        if terminated or truncated:
            return None
    return None


@functools.cache
def example_messages(env_id: str, count: int, reply_format: str) -> tuple[dict[str, Any], ...]:
    """Return ``count`` oracle episodes as chat messages, replies in ``reply_format``.

    ``user`` and ``assistant`` alternate, starting with a ``user`` message and
    ending with an ``assistant`` one, so the real episode's first observation
    follows as the next ``user`` message.  Cached per process: copy a message
    before changing it.

    >>> messages = example_messages("agent_envs/GuessNumber-v0", 1, "action")
    >>> [m["role"] for m in messages[:3]], messages[1]["content"]
    (['user', 'assistant', 'user'], '50')
    """
    messages: list[dict[str, Any]] = []
    for _, turns in oracle_episodes(env_id, count):
        for observation, action in turns:
            messages.append({"role": "user", "content": observation})
            messages.append({"role": "assistant", "content": format_action(action, reply_format)})
    return tuple(messages)


class PromptStyle:
    """What an LLM agent's prompts look like: reply format, system prompt and few-shot examples.

    ``HFAgent``, ``OpenAIChatAgent`` and ``LlamaCppAgent`` take the same four
    arguments and hand them to this class, so that they prompt alike.

    Args:
        few_shot: how many oracle episodes to show before the real one (0: none).
        reply_format: ``"action"`` or ``"think"`` (see
            :data:`~baselines.llm.prompting.replies.REPLY_FORMATS`); ``None`` picks
            :func:`~baselines.llm.prompting.replies.choose_reply_format`'s default.
        system_prompt: a system prompt, ``None`` for none, or
            :data:`~baselines.llm.prompting.replies.FORMAT_PROMPT` for the reply
            format's own.
        env_id: the env the examples come from; by default each episode's
            ``info["registered_id"]``, which the evaluator adds because
            :attr:`required_info` asks for it.
    """

    def __init__(
        self,
        few_shot: int = 0,
        reply_format: str | None = None,
        system_prompt: str | None = FORMAT_PROMPT,
        env_id: str | None = None,
    ) -> None:
        self.few_shot = check_int(few_shot, "few_shot", 0, EXAMPLE_POOL)
        self.reply_format = choose_reply_format(reply_format, self.few_shot)
        self.system_prompt = system_prompt_for(system_prompt, self.reply_format)
        if env_id is not None and not isinstance(env_id, str):
            raise InvalidType(f"env_id must be a registered env id (str), got {env_id!r}.")
        self.env_id = env_id
        #: The info keys the evaluator must provide (the env's id, for examples).
        self.required_info = (ENV_ID,) if self.few_shot and env_id is None else ()

    def __repr__(self) -> str:
        return f"few_shot={self.few_shot}, reply_format={self.reply_format!r}"

    def write_reply(self, action: str) -> str:
        """Return ``action`` written as this style's reply, as the examples show it.

        The agents expose it as their ``write_reply``
        (:class:`agent_envs.protocol.ReplyWriter`), so that step quality shows
        them a reference trajectory in their own format.

        >>> PromptStyle(reply_format="think").write_reply("up")
        'Action: up'
        """
        return format_action(action, self.reply_format)

    def example_env(self, info: Mapping[str, Any]) -> str | None:
        """Return the env whose examples the episode ``info`` belongs to gets (``None``: none).

        Raises:
            ValueError: the episode's task is an example task, or the env's id
                is unknown.
        """
        if not self.few_shot:
            return None
        env_id = self.env_id or info.get(ENV_ID)
        if info.get(TASK_ID) is not None:
            check_not_example([info[TASK_ID]])
            if isinstance(env_id, str):
                check_not_example_instance(env_id, self.few_shot, [info[TASK_ID]])
        if not isinstance(env_id, str):
            raise InvalidValue(
                "few_shot needs the env's id: run under the evaluator (it adds "
                "info['registered_id']) or pass env_id='agent_envs/...'."
            )
        return env_id

    def check_tasks(self, env: Any, task_ids: Iterable[int]) -> None:
        """Refuse, before a run starts, tasks that are an example's instance (``ValueError``).

        The evaluator calls this with its env and task ids (see
        :func:`agent_envs.evaluation.evaluate`); ``env`` is the env stack or
        a registered id.
        """
        if not self.few_shot:
            return
        env_id = self.env_id or (env if isinstance(env, str) else _registered_id(env))
        if env_id is None:
            check_not_example(task_ids)
            return
        check_not_example_instance(env_id, self.few_shot, task_ids)

    def examples(self, info: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        """Return the example messages for the episode ``info`` belongs to (``()``: none)."""
        env_id = self.example_env(info)
        if env_id is None:
            return ()
        return example_messages(env_id, self.few_shot, self.reply_format)


def _registered_id(env: Any) -> str | None:
    """Return the registered id of an env stack (``None`` if it was not made by id)."""
    spec = getattr(getattr(env, "unwrapped", env), "spec", None)
    return getattr(spec, "id", None)
