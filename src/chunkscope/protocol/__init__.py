"""The protocol layer: the StreamChunk vocabulary, errors, rules and assembly.

Imports nothing but pydantic, so an adapter author can use it in a service.
"""

from __future__ import annotations

from ._assembly import *  # noqa: F403
from ._assembly import __all__ as _assembly_all
from ._chunks import *  # noqa: F403
from ._chunks import __all__ as _chunks_all
from ._errors import *  # noqa: F403
from ._errors import __all__ as _errors_all
from ._jsonl import *  # noqa: F403
from ._jsonl import __all__ as _jsonl_all
from ._messages import *  # noqa: F403
from ._messages import __all__ as _messages_all
from ._rules import *  # noqa: F403
from ._rules import __all__ as _rules_all

__all__ = [*_chunks_all, *_errors_all, *_messages_all, *_rules_all, *_assembly_all, *_jsonl_all]
