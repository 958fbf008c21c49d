"""``jiyi ui``'s server: a socket bound first (so ``--port 0`` has its port before the token's URL
is printed), then uvicorn on it."""

from __future__ import annotations

import socket
import sys
import webbrowser
from typing import TYPE_CHECKING

from .guards import LOOPBACK, Guard

if TYPE_CHECKING:
    from ..memory import Memory


def loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url(guard: Guard) -> str:
    """The link with the token: at 127.0.0.1 unless bound to one other address alone."""
    shown = guard.host if guard.host not in ("0.0.0.0", "::", *LOOPBACK) and not loopback(guard.host) else "127.0.0.1"
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{guard.port}/?token={guard.token}"


def serve(memory: Memory, host: str, port: int, *, open_browser: bool) -> None:
    import uvicorn

    from .app import create_app

    sock = bind(host, port)
    guard = Guard(port=sock.getsockname()[1], host=host)
    app = create_app(memory, guard)
    link = url(guard)
    if not loopback(host):
        print(
            f"jiyi ui: listening on {host}, not loopback only: other machines can reach this port "
            "(the token still guards it)",
            file=sys.stderr,
        )
    print(link, flush=True)
    if open_browser:
        webbrowser.open(link)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
