"""``python -m tilesim.cli``: the ``tilesim`` command."""

import sys

from tilesim.cli.main import main

sys.exit(main())
