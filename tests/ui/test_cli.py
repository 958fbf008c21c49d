"""``jiyi ui`` as a command: its link and token, the guards on the real server, the warning off
loopback, the message without the extra; and that neither the hook nor ``jiyi mcp`` loads it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from jiyi.cli import main

from ..helpers import run_hook

LINK = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{20,})$")


@contextmanager
def launched(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``jiyi ui --no-browser`` running, with the link it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "jiyi", "ui", "--no-browser", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None
        yield proc, proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.slow
def test_the_link_carries_a_fresh_token_and_the_server_guards(jiyi_home: Path) -> None:
    import jiyi

    with jiyi.Memory(home=jiyi_home) as memory:
        memory.session(project="p", session_id="w").note(
            title="Link zlib with -lz", type="bugfix", scope="global",
            content={"what": "ld: undefined symbol deflate", "why": "w", "where": "x", "learned": "y"},
        )  # fmt: skip
    with launched() as (_, first), launched() as (_, second):
        found, again = LINK.match(first), LINK.match(second)
        assert found and again, (first, second)
        assert found.group(2) != again.group(2)  # a token per launch
        port, token = found.groups()
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, follow_redirects=False) as client:
            assert client.get("/").status_code == 401
            answer = client.get(f"/?token={token}")
            assert answer.status_code == 303 and "HttpOnly" in answer.headers["set-cookie"]
            page = client.get("/")
            assert page.status_code == 200 and "Link zlib with -lz" in page.text
            assert client.get("/", headers={"Host": f"evil.example:{port}"}).status_code == 403


@pytest.mark.slow
def test_off_loopback_it_says_so() -> None:
    with launched("--host", "0.0.0.0") as (proc, link):
        assert LINK.match(link), link
        assert proc.stderr is not None
        assert "not loopback only" in proc.stderr.readline()


def test_the_page_comes_with_every_install() -> None:
    # Tried as a new user would: `pip install .` then `jiyi ui` answered "needs the ui extra".
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    wanted = {"starlette", "uvicorn", "jinja2", "python-multipart"}
    assert wanted <= {re.split("[<>=; ]", d)[0] for d in project["dependencies"]}


def test_a_lost_library_is_named_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jinja2" else real(name, *a))
    done = CliRunner().invoke(main, ["ui", "--no-browser"])
    assert done.exit_code == 1
    assert "pip install jinja2" in done.output and "E_UNAVAILABLE" in done.output
    assert "Traceback" not in done.output


def test_help() -> None:
    done = CliRunner().invoke(main, ["ui", "--help"])
    assert done.exit_code == 0 and "--no-browser" in done.output and "--host" in done.output


def _loaded(code: str) -> str:
    probe = code + "\nprint(sorted(n for n in ('jiyi.ui', 'jinja2', 'jiyi.diagnosis') if n in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_neither_the_hook_nor_the_mcp_server_loads_the_page(tmp_path: Path, jiyi_home: Path) -> None:
    done = run_hook(tmp_path, jiyi_home, {"hook_event_name": "Stop", "session_id": "s"})
    assert done.returncode == 0
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "jiyi", "hook", "claude-code"],
        input=b"", capture_output=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert not re.search(rb"\b(jinja2|starlette|uvicorn|jiyi\.ui|jiyi\.diagnosis)\b", timed.stderr)
    start = "import sys\nfrom jiyi.mcp_server import start as s\ns._import_server()\nimport jiyi.mcp_server.server"
    assert _loaded(start) == "[]"
    cli = "import sys\nfrom jiyi.mcp_server import start as s\ns.serve = lambda: None\nsys.argv = ['jiyi', 'mcp']"
    assert _loaded(cli + "\nfrom jiyi.cli import main\nmain()") == "[]"


def test_a_port_in_use_is_a_coded_error(jiyi_home: Path) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        done = CliRunner().invoke(main, ["ui", "--no-browser", "--port", str(taken.getsockname()[1])])
    finally:
        taken.close()
    assert done.exit_code == 1 and "cannot listen on 127.0.0.1" in done.output and "E_UNAVAILABLE" in done.output
    assert "Traceback" not in done.output
