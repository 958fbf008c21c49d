"""Requests on connections the server is closing (``python bench/keepalive.py``).

uvicorn closes a connection idle for ``timeout_keep_alive`` seconds; a client whose pool keeps
connections at least as long may send a request on one just as it closes. Here ``--clients``
threads each keep one connection and wait about ``--keep-alive`` seconds (± 10 ms) between
requests to a uvicorn server with that ``timeout_keep_alive``, ``--rounds`` times, and count the
failures: ``plain`` with httpx as the team client used it (no retry), ``team`` with ``TeamClient``
(one retry of a dropped idempotent request), both pools keeping connections longer than the server.
"""

from __future__ import annotations

import argparse
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import uvicorn

from jiyi.errors import Unavailable
from jiyi.team.client import http as team_client


async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"ok": true}'})


def run(mode: str, clients: int, rounds: int, keep_alive: int) -> tuple[int, Counter[str]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, host="127.0.0.1", log_level="error", lifespan="off", timeout_keep_alive=keep_alive)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    team_client.KEEPALIVE_EXPIRY = keep_alive + 4.0  # the race is the point: the retry alone guards
    failures: Counter[str] = Counter()
    lock = threading.Lock()

    def one(seed: int) -> None:
        rnd = random.Random(seed)
        if mode == "plain":
            http = httpx.Client(base_url=url, limits=httpx.Limits(keepalive_expiry=keep_alive + 4.0), trust_env=False)
            call: Callable[[], Any] = lambda: http.get("/v1/health").raise_for_status()  # noqa: E731
        else:
            call = team_client.TeamClient(url, "jiyi_x").health
        call()
        for _ in range(rounds):
            time.sleep(keep_alive + rnd.uniform(-0.01, 0.01))
            try:
                call()
            except (httpx.HTTPError, Unavailable) as exc:
                cause = exc.__cause__ if isinstance(exc, Unavailable) and exc.__cause__ else exc
                with lock:
                    failures[type(cause).__name__] += 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    server.should_exit = True
    return clients * rounds, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--keep-alive", type=int, default=1, help="uvicorn's timeout_keep_alive (s)")
    args = parser.parse_args()
    for mode in ("plain", "team"):
        sent, failures = run(mode, args.clients, args.rounds, args.keep_alive)
        shown = ", ".join(f"{name} {n}" for name, n in sorted(failures.items())) or "none"
        print(f"{mode:5}  {sent} requests after ~{args.keep_alive} s idle: {sum(failures.values())} failed ({shown})")


if __name__ == "__main__":
    main()
