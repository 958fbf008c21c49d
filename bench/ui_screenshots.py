"""Screenshots of the review page for the docs: ``python bench/ui_screenshots.py`` writes
docs/ui/{records,search,record,sessions,health}.png in Chinese (the default locale) and the same
under docs/ui/en/ in English.

A store in a temporary JIYI_HOME with the tests' records (tests/ui/conftest.py: a revised note with
replay runs, an automatic record waiting for confirmation, a hostile title) and a few more, served
and shot with the browser tests' own setup (tests/ui/live.py: Debian's chromium through Playwright).
The Chinese ones need a CJK font on the machine that shoots (Debian: ``apt-get install
fonts-noto-cjk``; not needed by the tests or CI). Each file is squeezed with ``optipng`` when it is
installed (``apt-get install optipng``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
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
    from tests.ui.live import unavailable

    if reason := unavailable():
        sys.exit(f"no screenshots: {reason}")
    for locale, out in (("zh", OUT), ("en", OUT / "en")):
        shoot(locale, out)


def shoot(locale: str, out: Path) -> None:
    home = tempfile.mkdtemp(prefix=f"jiyi-shots-{locale}-")
    os.environ.update(JIYI_HOME=home, JIYI_CONFIG_DIR=home + "/config", JIYI_LOCALE=locale)
    from tests.ui.conftest import populate
    from tests.ui.live import browser, serving

    import jiyi

    out.mkdir(parents=True, exist_ok=True)
    with jiyi.Memory(cwd=home) as memory:
        data = populate(memory)
        session = memory.session(session_id="writer-2")
        for title, kind, what in MORE:
            content = {"what": what, "why": "seen in CI", "where": "CI", "learned": title}
            session.note(title=title, type=kind, scope="global", content=content)
            session.search(what)
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
                target = out / f"{name}.png"
                page.screenshot(path=str(target))
                if shutil.which("optipng"):
                    subprocess.run(["optipng", "-quiet", "-o2", str(target)], check=True)
                print(target, target.stat().st_size)


if __name__ == "__main__":
    main()
