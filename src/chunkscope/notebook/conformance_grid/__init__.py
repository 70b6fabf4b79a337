"""The conformance grid widget: a ``ConformanceReport`` as a grid of cases and checks.

``_widget`` (the ``ConformanceGrid`` anywidget and the opened case's timeline)
with its ES module ``conformance_grid.js`` and stylesheet
``conformance_grid.css``; ``_static_html`` (the escaped, script-free grid a
saved notebook shows) and ``_display`` (the IPython hooks that show a report
as the grid, registered by name so nothing loads before one is displayed).
The conformance layer knows nothing of notebooks: its report reaches its HTML
only through these hooks.
"""
