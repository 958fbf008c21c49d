"""The server's stdin as the SDK's stdio transport would read it, each line screened first
(``wire.screen``: a request with an id such as ``true`` or ``1.5`` must still get an answer).

``stdio_server`` takes a stdin of ours as it is, so this module claims fd 0 as the SDK does when
it opens stdin itself: the client's lines are read from a private duplicate, and fd 0 points at
the null device while the server runs, so a tool's child process reads end-of-file rather than
the client's next requests. fd 0 is restored on exit. Where a descriptor cannot be duplicated or
moved, the process's stdin is read in place, as the SDK does then.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import BinaryIO

import anyio

from .wire import screen


class Screened(anyio.AsyncFile[str]):
    """Lines of a text file, each through ``wire.screen`` before the transport parses it."""

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in super().__aiter__():
            yield screen(line)


def _private_duplicate() -> int:
    """fd 0 again, on a descriptor above the standard three (so it never stands in for stdout)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        duplicate = os.dup(0)
        if duplicate <= 2:
            os.close(duplicate)
            raise OSError("the duplicate of stdin landed in the standard range") from None
        return duplicate
    return fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)


@contextmanager
def screened_stdin() -> Iterator[Screened]:
    """The client's lines, screened, for ``stdio_server(stdin=…)``."""
    buffer: BinaryIO = sys.stdin.buffer
    private = None
    try:
        if buffer.fileno() == 0:
            private = _private_duplicate()
            # closefd=False: a thread may still block reading it when the server ends.
            wire = os.fdopen(private, "rb", closefd=False)
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, 0)
            finally:
                os.close(null)
            buffer = wire
    except (OSError, ValueError):  # fd 0 was not moved: read it in place
        if private is not None:
            os.close(private)
            private = None
    text = io.TextIOWrapper(buffer, encoding="utf-8", errors="replace")
    try:
        yield Screened(text)
    finally:
        with suppress(ValueError):
            text.detach()  # the buffer stays open: it may be the process's own stdin
        if private is not None:
            os.dup2(private, 0)
