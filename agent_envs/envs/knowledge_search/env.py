"""KnowledgeSearch: answer a multi-hop question by looking up a fictional knowledge base."""

from __future__ import annotations

import numpy as np

from agent_envs.core import TextEnv, parse_bracket_call, sanitize
from agent_envs.envs.knowledge_search.knowledge_base import (
    KnowledgeTask,
    make_knowledge_task,
    normalize_answer,
)
from wrappers.errors import InvalidValue
from wrappers.utils.validators import check_int

__all__ = ["KnowledgeSearchEnv"]

_VERBS = frozenset({"search", "answer"})


class KnowledgeSearchEnv(TextEnv[KnowledgeTask]):
    """Answer a multi-hop question about fictional entities with a search tool.

    ## Description
    Each task generates a knowledge base of 25 to 34 fictional entities
    (countries, cities, universities, people, companies, products) whose
    names are built from syllables and are unique within the base, linked by
    relations such as ``made_by``, ``founded_by``, ``ceo``, ``born_in``,
    ``studied_at`` and ``capital``.  The question chains 2 to 4 relations
    from one named entity, for example *"What is the birthplace of the
    founder of the company that makes Velkor Pro?"*.  Since the world is
    invented, the answer has to be looked up hop by hop: an information-
    gathering task that tests tool use and multi-step retrieval.

    ## Action Space
    ``Text``, two tools, lenient about case and spacing:

    * ``search[<name>]``: shows the page of the entity with that name (its
      facts as sentences, including the facts that point at it).  Names match
      after normalisation (case, punctuation, articles and spacing do not
      matter).  An inexact name shows the up to 5 closest names instead,
      ranked by BM25 over character trigrams; that is still a valid action.
    * ``answer[<text>]``: the final answer; it ends the episode.

    An empty ``search[]`` or ``answer[]``, or any other text, is invalid:
    nothing changes and the turn is used.  ``action_vocabulary`` is ``None``
    because both tools take free text.

    ## Observation Space
    ``Text``: the reset observation explains the tools and states the
    question; each step observation is the tool's result followed by the
    question again.

    ## Starting State
    The question, with no page read yet; the knowledge base and question are
    built from the task id.

    ## Rewards
    ``1.0`` for a correct answer, ``0.0`` otherwise.

    ## Episode End
    ### Termination
    Any answer.  The answer is correct when it equals the answer entity's
    full name after normalisation (lowercase, punctuation and the articles
    a, an, the removed, whitespace collapsed).  A wrong answer is a terminal
    failure with ``dead_end`` True.
    ### Truncation
    Never by the env; use ``wrappers.TurnBudget``.

    ## Information
    ``task_id``, ``success``, ``valid_action``, ``dead_end``.  ``dead_end``
    is True only after a wrong answer.

    ## Oracle
    Search results are only information, so an agent that knows the base
    could answer at once.  "Optimal" here means the fewest turns of an agent
    that knows only what it has read: it must open the page of every entity
    on the question's chain except the answer (the named entity first; each
    page names the next), then answer.  ``oracle_turns()`` is the number of
    those pages not yet opened, plus 1 for the answer; ``oracle_actions()``
    is the search for the first unopened one in chain order, or the answer
    once all are open.  So a 2-hop question takes 3 turns from the start.
    ``admissible_actions()`` lists ``search[<name>]`` for every entity in the
    base, and ``answer[<name>]`` for every entity the agent has seen named
    (in the question, on an opened page or in a list of closest names); any
    other text is a valid search or answer too.

    ## Arguments
    ``min_hops``, ``max_hops`` (int, default 2 and 2): the number of
    relations the question chains, drawn uniformly per task, in ``1..4``.

    ## Version History
    * v0: initial version.
    """

    action_format = "Use search[name] to look an entity up or answer[text] to answer."

    def __init__(
        self, min_hops: int = 2, max_hops: int = 2, render_mode: str | None = None
    ) -> None:
        check_int(min_hops, "min_hops")
        check_int(max_hops, "max_hops")
        if not 1 <= min_hops <= max_hops <= 4:
            raise InvalidValue(f"Need 1 <= min_hops <= max_hops <= 4, got {min_hops}, {max_hops}.")
        self.min_hops, self.max_hops = min_hops, max_hops
        super().__init__(render_mode=render_mode)

    def _make_task(self, task_id: int, rng: np.random.Generator) -> KnowledgeTask:
        return make_knowledge_task(rng, (self.min_hops, self.max_hops))

    def _start(self, task: KnowledgeTask) -> None:
        self._opened: set[int] = set()
        self._seen: set[int] = {task.chain[0]}
        self._answer: str | None = None
        self._correct = normalize_answer(task.names[task.chain[-1]])

    def _intro(self) -> str:
        return (
            "Answer a question about a fictional world; nothing about it is known outside its "
            "knowledge base, so look things up. search[name] shows the page of the entity "
            "with that name, or the closest names when none matches exactly. answer[text] "
            "gives your final answer and ends the episode."
        )

    def _view(self) -> str:
        return f"Question: {self.task.question}"

    def _parse(self, action: str) -> tuple[str, str] | None:
        return parse_bracket_call(action, _VERBS)

    def _apply(self, move: tuple[str, str]) -> tuple[str, bool]:
        verb, argument = move
        task = self.task
        if self._answer is not None:
            return "The question is answered; the episode is over.", False
        if verb == "answer":
            self._answer = normalize_answer(argument)
            if self._is_success():
                return f"Correct: the answer is {task.names[task.chain[-1]]}.", True
            return f'Wrong answer "{sanitize(argument, 60)}"; the episode is over.', True
        entity = task.by_name.get(normalize_answer(argument))
        if entity is not None:
            self._opened.add(entity)
            self._seen.add(entity)
            self._seen.update(task.mentions[entity])
            return f"Page of {task.names[entity]}:\n{task.pages[entity]}", True
        matches = task.closest(argument)
        if not matches:
            return f'No entity matches "{sanitize(argument, 60)}".', True
        self._seen.update(matches)
        listed = ", ".join(task.names[m] for m in matches)
        return f'No page is named "{sanitize(argument, 60)}". Closest names: {listed}.', True

    def _is_success(self) -> bool:
        return self._answer == self._correct

    def _is_failure(self) -> bool:
        return self._answer is not None and not self._is_success()

    def admissible_actions(self) -> list[str]:
        """Every entity's search, and an answer for each entity seen named so far."""
        if self._answer is not None:
            return []
        task = self.task
        answers = [f"answer[{task.names[entity]}]" for entity in sorted(self._seen)]
        return [*task.search_actions, *answers]

    def _unopened(self) -> list[int]:
        return [entity for entity in self.task.chain[:-1] if entity not in self._opened]

    def oracle_actions(self) -> list[str]:
        if self._answer is not None:
            return []
        task = self.task
        unopened = self._unopened()
        if unopened:
            return [f"search[{task.names[unopened[0]]}]"]
        return [f"answer[{task.names[task.chain[-1]]}]"]

    def answer(self) -> str:
        """Return the name that answers the question."""
        return self.task.names[self.task.chain[-1]]

    def oracle_turns(self) -> int | None:
        if self._answer is not None:
            return 0 if self._is_success() else None
        return len(self._unopened()) + 1
