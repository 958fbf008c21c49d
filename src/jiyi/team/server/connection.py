"""uvicorn's HTTP protocol with a deadline for a request's headers (``jiyi team serve`` runs it).

uvicorn closes a connection idle after a response (``timeout_keep_alive``), but arms that timer
only once a response was sent, and cancels it on every byte received: a connection that sends
nothing, or sends its headers a byte at a time, was kept open for ever, each holding a socket and
its buffers. Here a connection must deliver a request's complete headers within
``headers_seconds`` of connecting, or of its first byte after a response; else it is closed. The
body has a deadline of its own, in the app (``limits.BODY_SECONDS``), since only the app reads it.

Behind a reverse proxy (nginx, a cloud load balancer) the proxy is the first to meet slow clients
and should bound them too (nginx: ``client_header_timeout``, ``client_body_timeout``); these
deadlines hold for what reaches the server directly, or through a proxy that streams.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADERS_SECONDS = 10.0


class _HeadersDeadline:
    """The deadline, for either of uvicorn's HTTP protocols (which it precedes in the MRO)."""

    headers_seconds = HEADERS_SECONDS
    _deadline: asyncio.TimerHandle | None = None
    # Kept by the protocol: its loop, its transport and the current request's cycle (None before
    # the first request's headers; ``response_complete`` once answered).
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any

    def _between_requests(self) -> bool:
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.headers_seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self._between_requests() and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm()  # the first byte of a request: its headers are due in time
        super().data_received(data)  # type: ignore[misc]
        if not self._between_requests():
            self._disarm()  # a request's headers are in: the app bounds its body

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]


class H11HeadersDeadline(_HeadersDeadline, H11Protocol):
    pass


HeadersDeadline: type[asyncio.Protocol] = H11HeadersDeadline
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is optional: uvicorn's pure-Python parser then
    pass
else:

    class HttpToolsHeadersDeadline(_HeadersDeadline, HttpToolsProtocol):
        pass

    HeadersDeadline = HttpToolsHeadersDeadline
