"""The tap table widget: the live table of calls a displayed ``Tap`` shows.

``_widget`` (the ``TapTable`` anywidget) with its ES module ``tap_table.js``
and stylesheet ``tap_table.css``; the escaped static copy a saved notebook
shows is built in ``_widget`` from the same rows (``TapCall.row()``).
"""
