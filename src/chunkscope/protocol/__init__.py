"""The protocol layer: the StreamChunk vocabulary, errors, rules and assembly.

Imports nothing but pydantic, so an adapter author can use it in a service.
"""

from __future__ import annotations

from ._chunks import *  # noqa: F403
from ._chunks import __all__ as _chunks_all
from ._errors import *  # noqa: F403
from ._errors import __all__ as _errors_all
from ._messages import *  # noqa: F403
from ._messages import __all__ as _messages_all

__all__ = [*_chunks_all, *_errors_all, *_messages_all]
