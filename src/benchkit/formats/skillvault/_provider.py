"""The ``bundle`` provider: a condition whose answer is a ready-made bundle directory.

skillvault compares skill bundles that already exist on disk (``no_skill``,
``curated_skill``, and ``self_generated_skill`` through its ``stub`` adapter, which
generates nothing). Playing such a condition means pointing at its bundle: the provider
returns it as the response's ``artifacts``, and the verifiers check it.

A provider that really builds a bundle — a skill generator, say — plays the same role by
returning its output directory as ``Response(artifacts=...)``.
"""

from __future__ import annotations

from benchkit.model import Request, Response

__all__ = ["BundleProvider"]


class BundleProvider:
    """Answers every request with the condition's bundle directory (None without one).

    >>> import anyio
    >>> from pathlib import Path
    >>> from benchkit.model import Condition, ProviderSpec, Request, Task
    >>> condition = Condition("curated", ProviderSpec("bundle"), bundle=Path("/skills/a"))
    >>> anyio.run(BundleProvider().invoke, Request(Task("t1"), condition)).artifacts
    '/skills/a'
    """

    def __repr__(self) -> str:
        return "BundleProvider()"

    async def invoke(self, request: Request) -> Response:
        bundle = request.condition.bundle
        return Response(artifacts=None if bundle is None else str(bundle))
