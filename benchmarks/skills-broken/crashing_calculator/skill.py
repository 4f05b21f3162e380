"""A skill broken on purpose: it imports a module that does not exist, so the process exits
with status 1 and a traceback on stderr before it reads its request. benchkit reports every
cell as an ``execution_error`` carrying the end of that stderr."""

from __future__ import annotations

import calculator_engine  # noqa: F401  (there is no such module: the point of this skill)
