"""The timeline widget: the live block timeline of one stream or agent run.

``_widget`` (the ``Timeline`` anywidget, ``show``) with its ES module
``timeline.js`` and stylesheet ``timeline.css``; ``_records`` (the compact
chunk records both sides share), ``_state`` (a finished result as a state
dict), ``_view`` (the picture derived from a state, the rules ``timeline.js``
follows too) and ``_static_html`` (the escaped copy a saved notebook shows).
Only ``_widget`` needs anywidget: the rest loads with the protocol layer alone,
so this package's face stays empty and the notebook layer imports its modules.
"""
