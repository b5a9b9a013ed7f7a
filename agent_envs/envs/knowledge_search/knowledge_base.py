"""Fictional knowledge bases for KnowledgeSearch: names, facts, pages and questions.

Kept apart from the env so that ``env.py`` holds only the episode
logic.  Every name is built from syllables and checked unique within its base,
so no model can answer from prior knowledge and every name finds one page.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np

from agent_envs.envs.common.bm25 import BM25, char_trigrams
from agent_envs.envs.common.draws import Draws

__all__ = ["KnowledgeTask", "make_knowledge_task", "normalize_answer"]

_SYLLABLES = (
    "ka", "vel", "dor", "min", "tra", "zo", "rin", "bel", "mar", "qui", "sen", "tor", "lu",
    "vak", "nes", "pha", "gri", "ol", "zan", "ek", "thu", "ro", "fey", "dal", "bri", "os",
    "cal", "yen", "wim", "jor", "pel", "ska", "ud", "ver", "nix", "lo", "ari", "mey", "sto",
    "quar", "ith", "mo", "dra", "fen", "gal", "hes", "ir", "kor",
)  # fmt: skip

#: kind -> (how many per base, name suffixes; "{}" is the syllable stem).
_KINDS: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {
    "country": ((2, 3), ("{}ia", "{}land", "{}ora")),
    "city": ((5, 7), ("{}", "{}", "{}port", "{}ford", "{}heim", "{}by")),
    "university": ((2, 3), ("{} University", "{} Institute", "{} Academy", "{} College")),
    "person": ((7, 9), ("{} {}",)),
    "company": ((4, 5), ("{} Labs", "{} Industries", "{} Systems", "{} Works", "{} Motors",
                         "{} Foods", "{} Media", "{} Dynamics")),
    "product": ((5, 7), ("{} X4", "{} Pro", "{} Mini", "{} S2", "{} Max", "{} One", "{} Air",
                         "{} 300", "{} Neo")),
}  # fmt: skip

#: relation -> (subject kind, object kind, sentence, question phrase).
_RELATIONS: dict[str, tuple[str, str, str, str]] = {
    "made_by": ("product", "company", "{s} is made by {o}.", "the company that makes {x}"),
    "designed_by": ("product", "person", "{s} was designed by {o}.", "the designer of {x}"),
    "founded_by": ("company", "person", "{s} was founded by {o}.", "the founder of {x}"),
    "ceo": ("company", "person", "The CEO of {s} is {o}.", "the CEO of {x}"),
    "headquartered_in": ("company", "city", "{s} is headquartered in {o}.",
                         "the headquarters city of {x}"),
    "born_in": ("person", "city", "{s} was born in {o}.", "the birthplace of {x}"),
    "studied_at": ("person", "university", "{s} studied at {o}.",
                   "the university attended by {x}"),
    "campus_in": ("university", "city", "{s} is located in {o}.",
                  "the home city of {x}"),
    "located_in": ("city", "country", "{s} lies in {o}.", "the country containing {x}"),
    "capital": ("country", "city", "The capital of {s} is {o}.", "the capital of {x}"),
}  # fmt: skip

_OUTGOING = {
    kind: tuple(name for name, spec in _RELATIONS.items() if spec[0] == kind) for kind in _KINDS
}
_ARTICLES = frozenset({"a", "an", "the"})
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_MAX_ATTEMPTS = 200


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, and collapse whitespace (SQuAD-style).

    >>> normalize_answer("  The Velmar-Labs. ")
    'velmarlabs'
    """
    words = text.lower().translate(_PUNCTUATION).split()
    return " ".join(word for word in words if word not in _ARTICLES)


@dataclass
class KnowledgeTask:
    """A knowledge base and a multi-hop question over it.

    ``chain`` is the entities the question walks through, from the one it
    names to the answer; ``pages[i]`` is entity ``i``'s page and
    ``mentions[i]`` the other entities named on it.
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    pages: tuple[str, ...]
    mentions: tuple[tuple[int, ...], ...]
    chain: tuple[int, ...]
    question: str
    by_name: dict[str, int]
    search_actions: tuple[str, ...]
    index: BM25 | None = field(default=None, repr=False)

    @property
    def hops(self) -> int:
        """The number of relations the question chains."""
        return len(self.chain) - 1

    def closest(self, text: str, limit: int = 5) -> list[int]:
        """Return up to ``limit`` entities, best first, by BM25 over names' character trigrams."""
        if self.index is None:
            # Built on the first inexact search only: most episodes never need it.
            self.index = BM25([char_trigrams(name) for name in self.names])
        return self.index.rank(char_trigrams(text), limit)


def make_knowledge_task(rng: np.random.Generator, hops: tuple[int, int]) -> KnowledgeTask:
    """Build a fictional knowledge base and a question of ``hops[0]..hops[1]`` hops."""
    draws = Draws(rng)
    # Drawn once, so that retries do not favour the shorter (easier to find) chains.
    length = draws.between(*hops)
    for _ in range(_MAX_ATTEMPTS):
        names, kinds, facts = _knowledge_base(draws)
        # Walks are cheap next to building a base: try many before starting over.
        for _ in range(_MAX_ATTEMPTS):
            chain_relations = _walk(draws, kinds, facts, length)
            if chain_relations is not None:
                return _assemble(names, kinds, facts, *chain_relations)
    raise RuntimeError(f"could not build a question with {hops} hops.")


def _knowledge_base(draws: Draws) -> tuple[list[str], list[str], dict[tuple[int, str], int]]:
    names: list[str] = []
    kinds: list[str] = []
    stems: set[str] = set()
    normalized: set[str] = set()
    members: dict[str, list[int]] = {}
    for kind, ((low, high), patterns) in _KINDS.items():
        members[kind] = []
        for _ in range(draws.between(low, high)):
            name = ""
            # Names hold only letters, digits and single spaces, and no stem is an
            # article, so lowercasing is their normalisation.
            while not name or name.lower() in normalized:
                pattern = draws.choice(patterns)
                name = pattern.format(*(_stem(draws, stems) for _ in range(pattern.count("{}"))))
            normalized.add(name.lower())
            members[kind].append(len(names))
            names.append(name)
            kinds.append(kind)
    facts: dict[tuple[int, str], int] = {}
    # Every country gets a city first, so that each has a capital inside it.
    cities = members["city"]
    countries = members["country"]
    for position, city in enumerate(cities):
        country = countries[position] if position < len(countries) else draws.choice(countries)
        facts[city, "located_in"] = country
    for country in countries:
        facts[country, "capital"] = draws.choice(
            [city for city in cities if facts[city, "located_in"] == country]
        )
    for relation, (subject_kind, object_kind, _, _) in _RELATIONS.items():
        if relation in ("located_in", "capital"):
            continue
        for subject in members[subject_kind]:
            choices = members[object_kind]
            if relation == "ceo":
                # The CEO is someone other than the founder, so the two questions differ.
                choices = [p for p in choices if p != facts[subject, "founded_by"]]
            facts[subject, relation] = draws.choice(choices)
    return names, kinds, facts


def _stem(draws: Draws, used: set[str]) -> str:
    while True:
        stem = draws.choice(_SYLLABLES) + draws.choice(_SYLLABLES)
        if draws.below(3) == 0:
            stem += draws.choice(_SYLLABLES)
        stem = stem.capitalize()
        if stem not in used:
            used.add(stem)
            return stem


def _walk(
    draws: Draws, kinds: list[str], facts: dict[tuple[int, str], int], hops: int
) -> tuple[list[int], list[str]] | None:
    """A random chain of ``hops`` relations through distinct entities, or ``None``."""
    start = draws.below(len(kinds))
    chain, relations = [start], []
    for _ in range(hops):
        outgoing = _OUTGOING[kinds[chain[-1]]]
        relation = draws.choice(outgoing)
        target = facts[chain[-1], relation]
        if target in chain:
            return None
        chain.append(target)
        relations.append(relation)
    return chain, relations


def _assemble(
    names: list[str],
    kinds: list[str],
    facts: dict[tuple[int, str], int],
    chain: list[int],
    relations: list[str],
) -> KnowledgeTask:
    sentences: list[list[str]] = [
        [f"{name} is a {kind}."] for name, kind in zip(names, kinds, strict=True)
    ]
    mentions: list[list[int]] = [[] for _ in names]
    for (subject, relation), obj in facts.items():
        sentence = _RELATIONS[relation][2].format(s=names[subject], o=names[obj])
        sentences[subject].append(sentence)
        sentences[obj].append(sentence)
        mentions[subject].append(obj)
        mentions[obj].append(subject)
    phrase = names[chain[0]]
    for relation in relations:
        phrase = _RELATIONS[relation][3].format(x=phrase)
    return KnowledgeTask(
        names=tuple(names),
        kinds=tuple(kinds),
        pages=tuple(" ".join(lines) for lines in sentences),
        mentions=tuple(tuple(sorted(set(m))) for m in mentions),
        chain=tuple(chain),
        question=f"{'Who' if kinds[chain[-1]] == 'person' else 'What'} is {phrase}?",
        by_name={name.lower(): index for index, name in enumerate(names)},
        search_actions=tuple(f"search[{name}]" for name in names),
    )
