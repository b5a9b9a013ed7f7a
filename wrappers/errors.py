"""The user-error types: bad input the user can fix, told apart from the library's own bugs.

A command reports an error of these types (and of the command errors of
the higher layers, which derive from :class:`UserInputError`) as one line
with exit status 2.  Any other
exception, a ``ValueError`` or ``KeyError`` that a bug raises included, keeps
its traceback and exit status 1, so that a defect is never reported as a
user's mistake.

They derive from ``ValueError`` and ``TypeError`` as well, so that code
written against the plain types (``except ValueError``) keeps working.  They
live in ``wrappers`` (the bottom layer), where the argument checks of
:mod:`wrappers.utils.validators` raise them.

>>> issubclass(InvalidValue, ValueError) and issubclass(InvalidValue, UserInputError)
True
"""

from __future__ import annotations

__all__ = ["InvalidType", "InvalidValue", "UserInputError"]


class UserInputError(Exception):
    """The root of the errors a user can fix: one line, exit status 2 in a command."""


class InvalidValue(UserInputError, ValueError):
    """A value the user gave is out of range or malformed (raised where input is checked)."""


class InvalidType(UserInputError, TypeError):
    """A value the user gave has the wrong type (raised where input is checked)."""
