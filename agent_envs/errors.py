"""The base of the errors a command reports as one line and exit status 2.

It sits below every module that raises one (the argument helpers, the
evaluator's run session), so that none of them imports another for it.  It
derives from :class:`wrappers.errors.UserInputError`, the root of every user
error (the argument checks raise its ``InvalidValue`` and ``InvalidType``).
"""

from __future__ import annotations

from wrappers.errors import UserInputError

__all__ = ["CommandError"]


class CommandError(UserInputError):
    """A command stopped for a reason the user can act on: one line, exit status 2."""
