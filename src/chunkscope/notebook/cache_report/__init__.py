"""The prompt-cache report's display: ``CacheView`` (``_view``), one row per call, escaped HTML.

Needs no widget library: each row is a ``<details>`` element, so clicking it opens the first
change as a diff in a live notebook, a saved one and a plain HTML page alike.
"""
