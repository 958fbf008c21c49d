"""Screenshots of the review page for the docs: ``python bench/ui_screenshots.py`` writes
docs/ui/{records,search,record,sessions,health,forgotten}.png.

A store in a temporary JIYI_HOME with the tests' records (tests/ui/conftest.py: a revised note with
replay runs, an automatic record waiting for confirmation, a hostile title) and a few more, served
and shot with the browser tests' own setup (tests/ui/live.py: Debian's chromium through Playwright).
English labels (``locale = "en"``): they need no CJK font on the machine that shoots.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "ui"

MORE = [
    ("Run pytest with -p no:cacheprovider on a read-only checkout", "pitfall",
     "OSError: [Errno 30] Read-only file system: '.pytest_cache'"),
    ("Node 20 needs --experimental-vm-modules for Jest ESM", "config",
     "SyntaxError: Cannot use import statement outside a module"),
    ("Pin numpy<2 for the old pandas wheel", "bugfix",
     "ValueError: numpy.dtype size changed, may indicate binary incompatibility"),
    ("cargo build: link against OpenSSL 3 with OPENSSL_DIR", "bugfix",
     "error: failed to run custom build command for `openssl-sys v0.9.102`"),
]  # fmt: skip


def main() -> None:
    home = tempfile.mkdtemp(prefix="jiyi-shots-")
    os.environ.update(JIYI_HOME=home, JIYI_CONFIG_DIR=home + "/config", JIYI_LOCALE="en")
    from tests.ui.conftest import populate
    from tests.ui.live import browser, serving, unavailable

    import jiyi

    if reason := unavailable():
        sys.exit(f"no screenshots: {reason}")
    OUT.mkdir(parents=True, exist_ok=True)
    with jiyi.Memory(cwd=home) as memory:
        data = populate(memory)
        session = memory.session(session_id="writer-2")
        for title, kind, what in MORE:
            content = {"what": what, "why": "seen in CI", "where": "CI", "learned": title}
            session.note(title=title, type=kind, scope="global", content=content)
        memory.store.mark(data.yaml.hex, "outdated", "PyYAML ships wheels for 3.13 now")
        with serving(memory) as (base, guard), browser(Path(home) / "profile", viewport=None) as context:
            page = context.new_page()
            page.set_viewport_size({"width": 1180, "height": 760})
            page.goto(f"{base}/?token={guard.token}")
            shots = {
                "records": "/",
                "search": "/search?q=ld%3A+undefined+symbol+deflate",
                "record": f"/records/{data.zlib.id}",
                "sessions": "/sessions",
                "health": "/health",
            }
            for name, path in shots.items():
                page.goto(base + path)
                page.screenshot(path=str(OUT / f"{name}.png"))
                print(OUT / f"{name}.png")


if __name__ == "__main__":
    main()
