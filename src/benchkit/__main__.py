"""``python -m benchkit`` — see :mod:`benchkit.cli`."""

import sys

from benchkit.cli import main

sys.exit(main())
