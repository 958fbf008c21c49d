"""A store with something of each kind to review, and the review page's app over it in process."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

import jiyi
from jiyi.analysis.indexing import derive
from jiyi.records import Fix, Record, Reproduction, Revision, Verification, new_hex, now, snapshot

from ..helpers import YAML, note

PORT = 8765
HOSTILE = "<img src=x onerror=alert(1)>"


@dataclass
class Data:
    zlib: Record  # a note, revised once, with a reproduction and replay runs (1 passed, 1 failed)
    yaml: Record
    auto: Record  # an automatic record waiting for confirmation
    hostile: Record  # a note whose title and text are HTML


def _automatic(memory: jiyi.Memory) -> Record:
    stamp = now()
    here = memory.session().project
    record = Record(
        hex=new_hex(), title="Install libssl-dev for openssl/ssl.h", type="bugfix", scope="global",
        what="fatal error: openssl/ssl.h: No such file or directory", why="the headers were missing",
        where="apt", learned="apt-get install libssl-dev", project=here.name, project_key=here.key,
        origin="local_auto", topic_key="auto/openssl-ssl-h", session_id="auto-s", created=stamp, updated=stamp,
        fix=Fix("command", command="apt-get install libssl-dev"), tool_name="bash",
    )  # fmt: skip
    from jiyi.analysis.signature import analyze

    found = analyze(record.what)
    record = replace(record, signatures=found.signatures, symbols=found.symbols)
    rev = Revision(record.hex, 1, "auto-s", stamp, "created", snapshot(record))
    memory.store.write_record(record, rev, derive(record))
    return record


def populate(memory: jiyi.Memory) -> Data:
    # The project of the folder the page is started in, as an agent working there has it.
    writer = memory.session(session_id="writer-1")
    zlib = writer.note(**note(topic_key="build/zlib")).record
    zlib = writer.note(**note(topic_key="build/zlib", learned="add -lz after the object files")).record
    zlib = writer.note(**note(topic_key="build/zlib", learned="add -lz after the objects, before -lc")).record
    store = memory.store
    with_runs = replace(
        zlib,
        reproduction=Reproduction("make", "https://example.com/zlib-port.git", "abc1234"),
        verification=Verification("replay", "2026-11-30", "os=linux,arch=x86_64", 1, 2),
    )
    store.reindex_record(with_runs, derive(with_runs))
    yaml = writer.note(**YAML).record
    hostile = writer.note(
        **note(title=HOSTILE, what="TypeError: <script>alert('what')</script> is not a function", learned="<b>x</b>")
    ).record
    reader = memory.session(session_id="reader-1")
    reader.search("ld: undefined symbol deflate")
    reader.read(zlib.id)
    reader.observe_tool_result("bash", ok=False, error="make: *** [all] Error 2\nld: undefined symbol inflate")
    auto = _automatic(memory)
    got = store.get(zlib.hex)
    assert got is not None
    return Data(got, yaml, auto, hostile)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[jiyi.Memory]:
    with jiyi.Memory(cwd=tmp_path) as opened:
        yield opened


@pytest.fixture
def data(memory: jiyi.Memory) -> Data:
    return populate(memory)


def hits(memory: jiyi.Memory, query: str) -> list[str]:
    """What memory_search finds for ``query`` in a fresh session of the folder's project: ids, best first."""
    session = memory.session(session_id=f"check-{new_hex()[:8]}")
    return [hit.record.id for hit in session.search(query)]
