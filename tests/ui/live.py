"""The review page served for real (uvicorn on a loopback socket, in a thread of the test), and
Debian's chromium driven by Playwright: the same setup the browser tests and bench/ui_screenshots.py use."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jiyi
    from jiyi.ui.guards import Guard

CHROMIUM = Path("/usr/bin/chromium")
# Headless and quiet: no GPU, no QUIC, no first-run pages, nothing fetched in the background (the
# tests reach only the loopback server); ``evil.test`` resolves to loopback, as a DNS-rebinding
# attacker's name would.
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP evil.test 127.0.0.1",
]  # fmt: skip


def unavailable() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if not CHROMIUM.exists():
        return f"no browser at {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    return None


def required() -> None:
    """Skip with the reason, except in CI, where a missing browser fails the run."""
    import pytest

    reason = unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs the browser tests: {reason}")
    pytest.skip(reason)


@contextmanager
def serving(memory: jiyi.Memory) -> Iterator[tuple[str, Guard]]:
    """The app on a free loopback port until the block ends: (base URL, its guard)."""
    import uvicorn

    from jiyi.ui.app import create_app
    from jiyi.ui.guards import Guard
    from jiyi.ui.serve import bind

    sock = bind("127.0.0.1", 0)
    guard = Guard(port=sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(create_app(memory, guard), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{guard.port}", guard
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def browser(profile: Path, **options: Any) -> Iterator[Any]:
    """A chromium context on a fresh profile folder; never downloads a browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), args=ARGS, headless=True, **options
        )
        try:
            yield context
        finally:
            context.close()
