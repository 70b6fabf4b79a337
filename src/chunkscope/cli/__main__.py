"""``python -m chunkscope.cli``: the ``chunkscope`` command without its console script."""

import sys

from chunkscope.cli import main

sys.exit(main())
