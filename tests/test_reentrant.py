"""The shared re-entrant ``async with`` (benchkit._reentrant): the outermost entry opens,
its exit closes, a failed open leaves it closed."""

from __future__ import annotations

from types import TracebackType

import anyio
import pytest

from benchkit._reentrant import Reentrant


class Session(Reentrant):
    def __init__(self, fail: int = 0) -> None:
        self.events: list[str] = []
        self.fail = fail

    async def _first_enter(self) -> None:
        if self.fail:
            self.fail -= 1
            raise OSError("cannot open")
        self.events.append("open")

    async def _last_exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.events.append(f"close {exc_type.__name__ if exc_type else None}")


def test_only_the_outermost_entry_opens_and_its_exit_closes() -> None:
    async def main() -> Session:
        session = Session()
        async with session as entered:
            assert entered is session and session.entered
            async with session, session:
                assert session.events == ["open"]
            assert session.events == ["open"] and session.entered
        assert not session.entered
        with pytest.raises(KeyError):
            async with session:
                raise KeyError("x")
        return session

    session = anyio.run(main)
    assert session.events == ["open", "close None", "open", "close KeyError"]


def test_a_failed_open_leaves_it_closed_and_the_next_entry_opens_again() -> None:
    async def main() -> Session:
        session = Session(fail=1)
        with pytest.raises(OSError, match="cannot open"):
            async with session:
                pass
        assert not session.entered
        async with session:
            pass
        return session

    assert anyio.run(main).events == ["open", "close None"]
