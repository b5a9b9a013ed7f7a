"""Build the Wordle word lists shipped in ``agent_envs/data/`` from Debian's ``scowl`` package.

This script is run by hand, never by the package: the shipped ``.txt`` files are the
source of truth at run time.  It reads the SCOWL word lists that Debian installs in
``/usr/share/dict/scowl`` (``apt-get update && apt-get install -y scowl``; built with
version 2020.12.07-2) and writes three files:

* ``wordle_allowed.txt``: every lowercase ASCII 5-letter word of the ``english`` and
  ``american`` SCOWL lists up to size 50 (what Debian's ``wamerican`` holds, without
  proper names, abbreviations, contractions or accented words), less the blocklist.
* ``wordle_answers.txt``: the subset of those words at SCOWL sizes 10 and 20 (the most
  common words; SCOWL sizes these from public-domain frequency lists), less inflected
  forms whose base word is in SCOWL (plurals and third-person ``-s``, past tense
  ``-ed``, ``-ing`` forms) and less the blocklist.
* ``wordle_scowl_copyright.txt``: SCOWL's copyright and licence section, verbatim,
  as its licence asks for the notice to travel with every copy.

Usage::

    python tools/build_wordle_lists.py [--scowl /usr/share/dict/scowl]
        [--readme /usr/share/doc/scowl/README.gz] [--out agent_envs/data]

The output is deterministic: sorted, one word a line, after a ``#`` header.
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

SIZES_ALLOWED = (10, 20, 35, 40, 50)
SIZES_ANSWERS = (10, 20)
CATEGORIES = ("english", "american")
FIVE = re.compile(r"^[a-z]{5}$")

# Words left out of both lists: slurs, vulgar or sexual words, and words a game
# should not make someone type as its goal.  Kept short and explicit on purpose.
BLOCKLIST = frozenset(
    {
        "bigot",
        "bimbo",
        "bitch",
        "boner",
        "boobs",
        "booby",
        "chink",
        "coons",
        "cunts",
        "dicks",
        "dykes",
        "fagot",
        "fucks",
        "gooks",
        "gypsy",
        "horny",
        "hussy",
        "idiot",
        "kinky",
        "lynch",
        "moron",
        "nigga",
        "pansy",
        "penis",
        "pimps",
        "porno",
        "prick",
        "pussy",
        "queer",
        "raped",
        "rapes",
        "semen",
        "shits",
        "slags",
        "slave",
        "sluts",
        "turds",
        "wench",
        "whore",
    }
)

# Base words that the inflection heuristic would wrongly drop ("thing" is not "the" + "-ing").
KEEP = frozenset({"thing"})

HEADER = """\
# {title}
# Built by tools/build_wordle_lists.py from SCOWL {version} (Debian package scowl),
# Copyright 2000-2018 by Kevin Atkinson and others; see wordle_scowl_copyright.txt
# for the full notice and licence, which applies to this list.
# One lowercase word a line, sorted.  {count} words.
"""


def read_words(scowl: Path, sizes: tuple[int, ...], pattern: re.Pattern[str] | None) -> set[str]:
    """Return the words of the english and american lists at the given SCOWL sizes."""
    words: set[str] = set()
    for category in CATEGORIES:
        for size in sizes:
            path = scowl / f"{category}-words.{size}"
            if not path.exists():
                continue
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                word = line.strip()
                if pattern is None or pattern.match(word):
                    words.add(word)
    return words


def is_inflected(word: str, vocabulary: set[str]) -> bool:
    """Return whether ``word`` looks like an inflection of a word in ``vocabulary``."""
    if word.endswith("s") and not word.endswith("ss"):
        stems = {word[:-1]}
        if word.endswith("es"):
            stems.add(word[:-2])
        if word.endswith("ies"):
            stems.add(word[:-3] + "y")
        if stems & vocabulary:
            return True
    if word.endswith("ed"):
        stems = {word[:-2], word[:-1]}
        if word.endswith("ied"):
            stems.add(word[:-3] + "y")
        if len(word) > 3 and word[-3] == word[-4]:
            stems.add(word[:-3])  # doubled consonant: "stopped" -> "stop"
        if stems & vocabulary:
            return True
    if word.endswith("ing"):
        stems = {word[:-3], word[:-3] + "e"}
        if word.endswith("ying"):
            stems.add(word[:-4] + "ie")  # "dying" -> "die"
        if stems & vocabulary:
            return True
    return False


def copyright_section(readme: Path) -> str:
    """Return SCOWL's 'COPYRIGHT, SOURCES, and CREDITS' section from its README."""
    with gzip.open(readme, "rt", encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("COPYRIGHT, SOURCES, and CREDITS:")
    end = text.index("FUTURE PLANS:", start)
    version = text.splitlines()[1].strip()
    return f"SCOWL {version}: {text[start:end].rstrip()}\n"


def write_list(path: Path, title: str, words: list[str], version: str) -> None:
    header = HEADER.format(title=title, version=version, count=len(words))
    path.write_text(header + "".join(f"{word}\n" for word in words), encoding="ascii")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scowl", type=Path, default=Path("/usr/share/dict/scowl"))
    parser.add_argument("--readme", type=Path, default=Path("/usr/share/doc/scowl/README.gz"))
    parser.add_argument("--out", type=Path, default=Path("agent_envs/data"))
    args = parser.parse_args()

    # Every word up to size 50, of any length, decides what counts as a base form.
    vocabulary = read_words(args.scowl, SIZES_ALLOWED, None)
    allowed = sorted(read_words(args.scowl, SIZES_ALLOWED, FIVE) - BLOCKLIST)
    answers = sorted(
        word
        for word in read_words(args.scowl, SIZES_ANSWERS, FIVE)
        if word not in BLOCKLIST and (word in KEEP or not is_inflected(word, vocabulary))
    )
    assert set(answers) <= set(allowed)

    notice = copyright_section(args.readme)
    version = notice.split(":", 1)[0].removeprefix("SCOWL ")
    args.out.mkdir(parents=True, exist_ok=True)
    write_list(args.out / "wordle_allowed.txt", "Wordle: allowed guesses.", allowed, version)
    write_list(args.out / "wordle_answers.txt", "Wordle: hidden answers.", answers, version)
    (args.out / "wordle_scowl_copyright.txt").write_text(notice, encoding="utf-8")
    print(f"allowed: {len(allowed)} words, answers: {len(answers)} words -> {args.out}")


if __name__ == "__main__":
    main()
