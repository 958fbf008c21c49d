"""The team client against a tiny HTTP server that closes a kept-alive connection when the next
request arrives on it, without answering: what a client meets when uvicorn drops a connection idle
for its keep-alive time just as the client's pool reuses it (seen once under load as httpx's
``RemoteProtocolError``). Here it happens on every reuse, so the race is not left to timing."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from jiyi.errors import Unavailable
from jiyi.team.client.http import TeamClient

from ..team_helpers import free_socket

HEX = "a" * 32
ANSWERS = {
    "/v1/health": {"ok": True},
    "/v1/changes": {"records": [], "cursor": 0, "more": False},
    "/v1/push": {"accepted": [HEX], "unchanged": []},
    "/v1/forget": {"forgotten": [HEX], "unknown": [], "refused": []},
    f"/v1/verify/{HEX}": {"verification": {"how": "replay", "passed": 1, "tries": 1}},
}


class Dropping:
    """Answers the first request of each connection (kept alive) and closes the connection,
    unanswered, when a second request arrives on it; ``always``: closes every connection unanswered.
    ``reset``: the close is a reset (RST, what a server closing with the request unread sends;
    httpx's ``ReadError``), else an orderly one (FIN; ``RemoteProtocolError``)."""

    def __init__(self, always: bool = False, reset: bool = False) -> None:
        self.always, self.reset = always, reset
        self.requests: list[str] = []  # "METHOD path", every request read, answered or not
        self.sock = free_socket()
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as stream:
            for n in range(2):
                line = stream.readline().decode()
                if not line:
                    return
                length = 0
                while (header := stream.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    length = int(value) if name.strip().lower() == "content-length" else length
                stream.read(length)  # all of it: closing with unread bytes would reset, not close
                method, path = line.split()[:2]
                self.requests.append(f"{method} {path.split('?')[0]}")
                if n == 1 or self.always:
                    if self.reset:
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return  # closed before any response
                body = json.dumps(ANSWERS[path.split("?")[0]]).encode()
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
                conn.sendall(head.encode() + body)


@contextmanager
def dropping(always: bool = False, reset: bool = False) -> Iterator[Dropping]:
    server = Dropping(always, reset)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        server.sock.close()
        thread.join(5)
        assert not thread.is_alive()


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_an_idempotent_request_on_a_connection_closed_unanswered_is_sent_once_more(reset: bool) -> None:
    with dropping(reset=reset) as server, TeamClient(server.url, "jiyi_x") as client:
        assert client.health()
        assert client.changes(0, 10)["cursor"] == 0  # the reused connection is dropped: sent again
        assert client.push("m", [])["accepted"] == [HEX]  # pushes merge as a no-op when repeated
        assert client.forget([(HEX, True)]) == {"forgotten": [HEX], "unknown": [], "refused": []}
    # Every request after the first went twice: once on the kept connection, once on a new one.
    assert server.requests == [
        "GET /v1/health",
        *["GET /v1/changes"] * 2,
        *["POST /v1/push"] * 2,
        *["POST /v1/forget"] * 2,
    ]


def test_a_verification_report_is_not_sent_twice_and_a_retry_is_made_once() -> None:
    with dropping() as server, TeamClient(server.url, "jiyi_x") as client:
        assert client.health()
        # A replay run the server may have counted already: reported once, the failure said.
        with pytest.raises(Unavailable) as failed:
            client.report_verification(HEX, passed=True, how="replay", environment="os=linux", detail="")
    assert "RemoteProtocolError" in failed.value.reason
    assert server.requests == ["GET /v1/health", f"POST /v1/verify/{HEX}"]
    with dropping(always=True) as server, TeamClient(server.url, "jiyi_x") as client, pytest.raises(Unavailable):
        client.changes(0, 10)
    assert server.requests == ["GET /v1/changes"] * 2
