"""The display behaviour the notebook's live widgets share: a static copy beside the view.

A saved notebook (GitHub, nbviewer, a closed kernel) shows a widget's
``text/html`` and ``text/plain`` instead of running its JavaScript, so every
widget here puts an escaped static copy of itself next to the widget view.
"""

from __future__ import annotations

import uuid
from typing import Any

import anywidget

__all__ = ["StaticCopyWidget", "with_static_copy"]


def with_static_copy(bundle: Any, html: str, plain: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``bundle`` (a widget's ``_repr_mimebundle_``: (data, metadata), data, or None) with
    ``text/html`` and ``text/plain`` replaced by ``html`` and ``plain``."""
    data, metadata = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
    return {**data, "text/html": html, "text/plain": plain}, metadata


class StaticCopyWidget(anywidget.AnyWidget):
    """An anywidget whose outputs carry ``static_html()`` and ``_plain()`` beside the view.

    It is displayed under a display id, so ``_update_display()`` (called when
    a run ends or numbers change) replaces the saved static copy in place.
    Subclasses implement ``static_html`` and ``_plain`` (also the ``repr``).
    """

    _display_id: str | None = None

    def static_html(self) -> str:
        """The widget as an escaped HTML fragment (no script)."""
        raise NotImplementedError

    def _plain(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self._plain()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return with_static_copy(super()._repr_mimebundle_(**kwargs), self.static_html(), self._plain())

    def _ipython_display_(self) -> None:
        from IPython.display import display

        if self._display_id is None:
            self._display_id = uuid.uuid4().hex
        data, metadata = self._repr_mimebundle_()
        display(data, raw=True, metadata=metadata, display_id=self._display_id)  # type: ignore[no-untyped-call]

    def _update_display(self) -> None:
        if self._display_id is None:
            return
        from IPython.display import update_display

        data, metadata = self._repr_mimebundle_()
        update_display(  # type: ignore[no-untyped-call]
            data, raw=True, metadata=metadata, display_id=self._display_id
        )
