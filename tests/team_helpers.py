"""A real team server for tests: uvicorn on 127.0.0.1 in a thread, on a port of its own."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jiyi.config import Settings

if TYPE_CHECKING:
    from jiyi.store.postgres.database import PgDatabase


def free_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


def dead_url() -> str:
    """A port nobody listens on."""
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


@contextmanager
def serving(app: Any, port: int = 0, **options: Any) -> Iterator[str]:
    """``app`` served until the block ends; yields its base URL. ``options`` go to uvicorn's Config."""
    import uvicorn

    sock = free_socket(port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="none", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    # uvicorn has no event to wait on; `started` flips once it listens.
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the team server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def machine(tmp_path: Path, name: str, url: str, token: str, **changes: Any) -> Settings:
    """The settings of one machine: a JIYI_HOME of its own and the team server."""
    return Settings(home=tmp_path / name, team_url=url, team_token=token, **changes)


def server_count(db: PgDatabase, team: str = "alpha") -> int:
    """The team's record rows on the server, forgotten ones included."""
    with db.cursor() as cur:
        cur.execute("SELECT count(*) FROM records WHERE team_id = %s", (db.team_id(team),))
        row = cur.fetchone()
    assert row is not None
    return int(row[0])
