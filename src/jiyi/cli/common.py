"""What the command groups share: opening memory, printing JSON, turning errors into exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from ..errors import JiyiError
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
        click.echo(exc.text(), err=True)
        sys.exit(1)
    finally:
        memory.close()


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
    """A rich progress bar on stderr, beside result lines on stdout; drawn only on a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=transient,
        disable=not sys.stderr.isatty(),
    )
