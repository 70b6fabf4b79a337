"""The usage summary widget: the live summary a displayed ``UsageLog`` shows.

``_widget`` (the ``UsageSummary`` anywidget) with its ES module
``usage_summary.js`` and stylesheet ``usage_summary.css``; ``_static_html``
(the summary's JSON state and the escaped copy a saved notebook shows; needs
no widget library, so this package's face stays empty).
"""
