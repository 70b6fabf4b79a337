"""Hypothesis strategies for adapter authors (needs the ``testing`` extra: ``hypothesis``).

``valid_streams()`` draws streams that keep every rule of a profile, together
with the blocks they were built from; ``invalid_streams()`` draws streams that
break exactly one rule, with that rule's id::

    from hypothesis import given
    import chunkscope as cs
    from chunkscope.testing import valid_streams, invalid_streams

    @given(valid_streams())
    def test_my_consumer_accepts_valid_streams(stream):
        assert my_consumer(stream.chunks) == stream.assembled

    @given(invalid_streams())
    def test_checker_names_the_broken_rule(case):
        chunks, rule = case
        assert {v.rule for v in cs.check(chunks)} == {rule}

Deltas are split at arbitrary points: inside grapheme clusters (combining
marks, emoji ZWJ sequences, flags — a Python string holds code points, so that
is where "inside a multi-byte character" lands) and inside JSON tokens
(strings, escapes, numbers, keywords).

Inside: ``_content`` (texts, arguments, usage, failures), ``_valid`` (valid
streams), ``_mutations`` (one mutation per rule of ``RULES``, tagged with it).
"""

from __future__ import annotations

from chunkscope._extras import needs_extra

with needs_extra("chunkscope.testing"):  # the one dependency: the "testing" extra
    import hypothesis  # noqa: F401

from ._mutations import invalid_streams, rules_for
from ._valid import GeneratedStream, valid_streams

__all__ = ["GeneratedStream", "valid_streams", "invalid_streams", "rules_for"]
