"""What the command groups share: opening memory, printing JSON, turning errors into exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import InvalidArgument, JiyiError
from ..memory import Memory
from ..ranking import Hit
from ..records import Record
from ..session import Session

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
project_option = click.option("--project", default=None, help="Project name (default: from the working folder).")


@contextmanager
def opened() -> Iterator[Memory]:
    """Errors become their docs/spec.md §2 text on stderr and exit status 1."""
    memory = Memory()
    try:
        yield memory
    except JiyiError as exc:
        click.echo(exc.text(memory.settings.locale), err=True)
        sys.exit(1)
    finally:
        memory.close()


def read_input(source: str, field: str) -> str:
    """The text of the file ``source`` names (``-``: stdin) for the argument ``field``; a file that
    is missing, a folder, unreadable or not UTF-8 text is that argument's E_INVALID_ARGUMENT, not a
    traceback (issue 15)."""
    try:
        if source == "-":
            return sys.stdin.buffer.read().decode("utf-8") if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        return Path(source).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "标准输入" if source == "-" else source
        raise InvalidArgument(
            field,
            f"{where} 不是 UTF-8 文本（第 {exc.start} 字节）",
            f"{'stdin' if source == '-' else source} is not UTF-8 text (byte {exc.start})",
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidArgument(field, f"读不了 {source}：{reason}", f"cannot read {source}: {reason}") from None


def session(memory: Memory, project: str | None) -> Session:
    return memory.session(project=project)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False))


def record_json(record: Record) -> dict[str, Any]:
    from ..tools.formats import day

    return {
        "id": record.id,
        "title": record.title,
        "type": record.type,
        "scope": record.scope,
        "content": {"what": record.what, "why": record.why, "where": record.where, "learned": record.learned},
        "topic_key": record.topic_key,
        "revision": record.revision,
        "fix": record.fix.to_dict() if record.fix else None,
        "origin": record.origin,
        "project": record.project,
        "environment": record.environment,
        "tool_name": record.tool_name,
        "outcome": record.outcome,
        "evidence": {"sources": record.sources, "used_success": record.used_success},
        "evidence_refs": record.evidence_refs,
        "marked": [{"by": m.source_id, "relation": m.relation} for m in record.marked],
        # How to meet the failure again and what the team's replays concluded (docs/spec.md §5).
        "reproduction": record.reproduction.to_dict() if record.reproduction else None,
        "verification": record.verification.to_dict() if record.verification else None,
        "date": day(record.updated),
        "created": record.created,
        "updated": record.updated,
    }


def hit_json(hit: Hit) -> dict[str, Any]:
    return {
        "id": hit.record.id,
        "title": hit.record.title,
        "score": round(hit.score, 4),
        "signals": [
            {
                "name": s.name,
                "strength": round(s.strength, 4),
                "contribution": round(s.contribution, 4),
                "detail": s.detail,
            }
            for s in hit.signals
        ],
        "record": record_json(hit.record),
    }


def progress(*, transient: bool = False) -> Any:
    """A rich progress bar on stderr, beside result lines on stdout, on a terminal; elsewhere (a
    log, CI, a pipe) a plain line every few seconds for work that lasts that long (:class:`Lines`)."""
    if not sys.stderr.isatty():
        return Lines()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=transient,
    )


class _Task:
    __slots__ = ("completed", "description", "total", "visible")

    def __init__(self, description: str, total: float | None, visible: bool) -> None:
        self.description, self.total, self.visible, self.completed = description, total, visible, 0.0


class Lines:
    """The part of rich's ``Progress`` the commands use, as a line on stderr every ``INTERVAL``
    seconds (``import: 12000/30000 (40 %), 10 s``), and a last one at the end when any was printed:
    long work shows it is alive in a log too, short work stays silent."""

    INTERVAL = 5.0

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._started = self._last = self._clock()
        self._printed = False
        self.tasks: list[_Task] = []

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._printed:
            self._say()

    def add_task(self, description: str, total: float | None = None, visible: bool = True, **_: Any) -> int:
        self.tasks.append(_Task(description, total, visible))
        return len(self.tasks) - 1

    def advance(self, task: int, advance: float = 1) -> None:
        self.update(task, advance=advance)

    def update(
        self,
        task: int,
        *,
        advance: float | None = None,
        total: float | None = None,
        completed: float | None = None,
        description: str | None = None,
        **_: Any,
    ) -> None:
        state = self.tasks[task]
        if completed is not None:
            state.completed = completed
        if advance:
            state.completed += advance
        state.total = total if total is not None else state.total
        state.description = description or state.description
        if self._clock() - self._last >= self.INTERVAL:
            self._say()

    def _say(self) -> None:
        self._last = self._clock()
        self._printed = True
        elapsed = round(self._last - self._started)
        for state in self.tasks:
            if not state.visible:
                continue
            done = int(state.completed)
            share = f"{done}/{int(state.total)} ({100 * done / state.total:.0f} %)" if state.total else str(done)
            click.echo(f"{state.description}: {share}, {elapsed} s", err=True)
