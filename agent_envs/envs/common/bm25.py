"""Okapi BM25 keyword ranking over a small in-memory corpus, in plain Python.

The text-retrieval families (WebShop, KnowledgeSearch) rank a few dozen short
documents per task.  At that size plain dicts beat numpy.  Since BM25's
per-document term weight does not depend on the query, the index memoises it
per term, the first time a query needs it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from wrappers.utils.validators import check_number, check_probability

__all__ = ["BM25", "char_trigrams", "word_tokens"]

_WORD = re.compile(r"[a-z0-9]+")


def word_tokens(text: str) -> list[str]:
    """Return the lowercase ASCII alphanumeric runs of ``text``.

    >>> word_tokens("Non-Slip  Shoes, size 9!")
    ['non', 'slip', 'shoes', 'size', '9']
    """
    return _WORD.findall(text.lower())


def char_trigrams(text: str) -> list[str]:
    """Return the character trigrams of each word, padded with ``#`` at both ends.

    Trigrams make the ranking forgiving of typos and partial names.

    >>> char_trigrams("Kel")
    ['#ke', 'kel', 'el#']
    """
    grams: list[str] = []
    for word in word_tokens(text):
        padded = f"#{word}#"
        grams.extend(padded[index : index + 3] for index in range(len(padded) - 2))
    return grams


class BM25:
    """A BM25 index over tokenised documents (lists of terms).

    A term's postings are computed the first time a query uses it and kept,
    so building the index is cheap and a repeated query costs a few dict
    lookups.

    Args:
        documents: one token sequence per document; documents are referred to
            by their position.
        k1: term-frequency saturation.
        b: document-length normalisation (0 = none, 1 = full).

    Example:
        >>> index = BM25([["red", "shoes"], ["blue", "hat"], ["red", "hat"]])
        >>> index.rank(["red", "hat"])
        [2, 0, 1]
    """

    def __init__(
        self, documents: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75
    ) -> None:
        check_number(k1, "k1", 0.0)
        check_probability(b, "b")
        self.size = len(documents)
        self._k1 = k1
        self._counts: list[dict[str, int]] = []
        for document in documents:
            count: dict[str, int] = {}
            for term in document:
                count[term] = count.get(term, 0) + 1
            self._counts.append(count)
        total = sum(len(document) for document in documents)
        average = total / self.size if total else 1.0
        self._norms = [k1 * (1.0 - b + b * len(document) / average) for document in documents]
        self._postings: dict[str, tuple[tuple[int, float], ...]] = {}

    def _posting(self, term: str) -> tuple[tuple[int, float], ...]:
        """Return ``(document, weight)`` for each document holding ``term``."""
        posting = self._postings.get(term)
        if posting is None:
            hits = [(doc, count[term]) for doc, count in enumerate(self._counts) if term in count]
            # The "+1" idf (Lucene's) stays positive even for terms in every document.
            idf = math.log(1.0 + (self.size - len(hits) + 0.5) / (len(hits) + 0.5))
            k1 = self._k1
            posting = tuple(
                (doc, idf * tf * (k1 + 1.0) / (tf + self._norms[doc])) for doc, tf in hits
            )
            self._postings[term] = posting
        return posting

    def scores(self, query: Iterable[str]) -> dict[int, float]:
        """Return the positive BM25 score of every document that shares a term with ``query``.

        A term repeated in the query counts once.
        """
        totals: dict[int, float] = {}
        for term in dict.fromkeys(query):
            for doc, weight in self._posting(term):
                totals[doc] = totals.get(doc, 0.0) + weight
        return totals

    def rank(self, query: Iterable[str], limit: int | None = None) -> list[int]:
        """Return the matching documents, best first; ties go to the lower position."""
        totals = self.scores(query)
        ranked = sorted(totals, key=lambda doc: (-totals[doc], doc))
        return ranked if limit is None else ranked[:limit]
