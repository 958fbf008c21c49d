"""The forms that change a record: approve, mark wrong or outdated (and take it back), forget,
restore, purge. Each is a POST the guard let through (token, Host, Origin); here its ``csrf`` field
is checked, the change made through the library (``capture/curation``, the ``Store``), and the
browser sent back to where it came from (``next``, a path of this site only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ..errors import JiyiError
from ..records import RELATIONS, Record, split_ref
from ..store.base import Store
from .context import Context, context

_BAD_CSRF = "403: the form's csrf field is missing or not this launch's; nothing changed\n"
MAX_REASON = 2000


def _next(form: Any, fallback: str) -> str:
    # A path of this site only: never another host (``//evil``) or a scheme.
    wanted = form.get("next")
    if isinstance(wanted, str) and wanted.startswith("/") and not wanted.startswith("//") and "\\" not in wanted:
        return wanted
    return fallback


def _action(
    change: Callable[[Context, Store, Record, Any], str | None],
) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        ctx = context(request)
        form = await request.form()
        if not ctx.guard.csrf_ok(form.get("csrf")):
            return PlainTextResponse(_BAD_CSRF, status_code=403)
        ref = request.path_params["ref"]
        parts = split_ref(ref)
        store = ctx.memory.store
        found = None if parts is None else await run_in_threadpool(store.get, parts[1], include_forgotten=True)
        if found is None:
            return PlainTextResponse(f"404: no such record: {ref}\n", status_code=404)
        try:
            goes = await run_in_threadpool(change, ctx, store, found, form)
        except JiyiError as exc:
            return PlainTextResponse(f"400: {exc.first_line(ctx.locale)}\n", status_code=400)
        return RedirectResponse(goes or _next(form, f"/records/{found.id}"), status_code=303)

    return endpoint


def _approve(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    from ..capture.curation import approve

    approve(store, record.hex)
    return None


def _mark(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    from ..errors import InvalidArgument

    relation = form.get("relation")
    if relation not in RELATIONS:
        raise InvalidArgument("relation", "应为 wrong 或 outdated", "must be wrong or outdated")
    reason = str(form.get("reason") or "").strip()[:MAX_REASON]
    store.mark(record.hex, str(relation), reason)
    return None


def _unmark(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    relation = form.get("relation")
    if relation in RELATIONS:
        store.unmark(record.hex, str(relation))
    return None


def _forget(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    store.forget(record.hex)
    return None


def _restore(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    from ..capture.curation import restore

    restore(store, record.hex)
    return None


def _purge(ctx: Context, store: Store, record: Record, form: Any) -> str | None:
    if form.get("confirm") != "yes":  # the confirmation page's button says so
        return f"/records/{record.id}/purge"
    store.purge(record.hex)
    return "/"  # its own page is gone


ACTIONS = {
    name: _action(change)
    for name, change in (
        ("approve", _approve),
        ("mark", _mark),
        ("unmark", _unmark),
        ("forget", _forget),
        ("restore", _restore),
        ("purge", _purge),
    )
}
