"""TextSpace: gymnasium's ``Text`` space, refusing the vector mode that would blank it.

Gymnasium's ``AsyncVectorEnv(..., shared_memory=True)`` (its default) reads a
``Text`` space's shared buffer once, when it is built, into a tuple of strings;
every later observation is that stale snapshot, a run of ``"\\n"`` characters,
with no error.  The envs and wrappers here declare their text observations as
:class:`TextSpace`, a ``Text`` in every other respect, for which gymnasium's
shared-memory hook raises instead, so that ``AsyncVectorEnv`` stops at
construction with a message that names the fix.  ``SyncVectorEnv`` and
``AsyncVectorEnv(..., shared_memory=False)`` never touch the hook and work.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from gymnasium.error import CustomSpaceError
from gymnasium.vector.utils import create_shared_memory

__all__ = ["SHARED_MEMORY_ERROR", "TextSpace"]

SHARED_MEMORY_ERROR = (
    "Text observations cannot travel through gymnasium's shared memory: AsyncVectorEnv would "
    "return a blank string for every observation. Build it with shared_memory=False "
    "(gym.make_vec(id, n, vectorization_mode='async', vector_kwargs={'shared_memory': False})) "
    "or use SyncVectorEnv."
)


class TextSpace(spaces.Text):
    """A ``gymnasium.spaces.Text`` that refuses gymnasium's shared-memory vector mode.

    Example:
        >>> from gymnasium import spaces
        >>> from wrappers.utils.text_space import TextSpace
        >>> space = TextSpace(max_length=8, charset="ab")
        >>> isinstance(space, spaces.Text), space.contains("abba")
        (True, True)
    """


@create_shared_memory.register(TextSpace)
def _refuse_shared_memory(space: TextSpace, n: int = 1, ctx: Any = None) -> Any:
    # AsyncVectorEnv turns a CustomSpaceError into its own "disable shared_memory"
    # ValueError, chained to this one, which says why.
    raise CustomSpaceError(SHARED_MEMORY_ERROR)
