"""The shape both backends declare their schema in: a ``Migrations`` registry of named steps, in the
order they apply (after sqlite-utils' migrations: one registry, asked what is pending and what is
applied). Each backend keeps its dialect in its own module: how a step is written (a function of a
sqlite3 connection; PostgreSQL text), the table that records the steps applied, and how one is
run and recorded (``store/sqlite/migrations.py``, ``store/postgres/migrations.py``).

A name, once shipped, is the step's identity in every store and database made since: it is never
renamed nor reused, and the step never edited (add a new one). Names are checked unique when a
step is declared, so a copied step fails at import, not in a user's store.

Imports nothing at run time, as the SQLite steps do (``tests/store/test_migration_registry.py``
holds it). The hook no longer needs that: it checks a store by ``store/sqlite/statements.py``'s
``SCHEMA_STEPS`` without importing the steps.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads the name as typing's
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Generic, TypeVar

    Step = TypeVar("Step")
else:
    # The step's type is for mypy alone: at run time both classes are plain.
    Step = None

    class Generic:
        def __class_getitem__(cls, _param: object) -> type:
            return object


class Migration(Generic[Step]):
    """One step: its ``name`` (the row recorded once it is applied), the ``step`` itself as the
    backend writes it, and whether it is ``transactional``.

    A transactional step runs in one transaction with the row that records it, so a failure leaves
    neither. Some statements refuse a transaction (SQLite's ``VACUUM`` or a change of
    ``journal_mode``, PostgreSQL's ``CREATE INDEX CONCURRENTLY``): such a step runs on its own
    and is recorded after it succeeded, so it must be safe to run again (``IF NOT EXISTS``) when
    it was interrupted before its row was written, or run by two processes at once."""

    __slots__ = ("name", "step", "transactional")

    def __init__(self, name: str, step: Step, *, transactional: bool = True) -> None:
        self.name = name
        self.step = step
        self.transactional = transactional

    def __repr__(self) -> str:
        return f"Migration({self.name!r}{'' if self.transactional else ', transactional=False'})"


class Migrations(Generic[Step]):
    """The steps of one backend, in the order they apply. ``Migrations(steps)`` starts from
    ``steps`` (e.g. another registry, to try one more step in a test)."""

    __slots__ = ("_names", "_steps")

    def __init__(self, steps: Iterable[Migration[Step]] = ()) -> None:
        self._steps: list[Migration[Step]] = []
        self._names: set[str] = set()
        for migration in steps:
            self._append(migration)

    def _append(self, migration: Migration[Step]) -> None:
        if not migration.name or migration.name != migration.name.strip():
            raise ValueError(f"a migration needs a plain name, not {migration.name!r}")
        if migration.name in self._names:
            raise ValueError(f"two migrations are named {migration.name}")
        self._steps.append(migration)
        self._names.add(migration.name)

    def add(self, name: str, step: Step, *, transactional: bool = True) -> Migration[Step]:
        """Declare the next step; ``ValueError`` when its name is taken."""
        migration = Migration(name, step, transactional=transactional)
        self._append(migration)
        return migration

    def __iter__(self) -> Iterator[Migration[Step]]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> list[str]:
        return [m.name for m in self._steps]

    # The queries take the names a store recorded (its ``_migrations`` rows): each backend reads
    # them in its own way, on a connection of its own.
    def pending(self, applied_names: Iterable[str]) -> list[Migration[Step]]:
        """The steps not among ``applied_names``, in the order they apply."""
        done = set(applied_names)
        return [m for m in self._steps if m.name not in done]

    def applied(self, applied_names: Iterable[str]) -> list[Migration[Step]]:
        """The steps among ``applied_names``, in the order they apply."""
        done = set(applied_names)
        return [m for m in self._steps if m.name in done]

    def unknown(self, applied_names: Iterable[str]) -> list[str]:
        """The names among ``applied_names`` that no step here has (a newer jiyi applied them), in
        the order given."""
        return [name for name in applied_names if name not in self._names]
