"""Linking an MCP server to its conversation's hook events when no session id says which (docs/spec.md §5).

Claude Code starts a plugin's MCP server with the conversation's id (``CLAUDE_CODE_SESSION_ID``),
and ``JIYI_SESSION_ID`` names one anywhere else; with either, hooks and server meet by that id.
An agent that gives its server neither — while its hook events carry ``session_id`` — still must
meet them, or no search would carry the failure the agent just hit. The rule, one place:

- a session jiyi made up itself has an id starting with :data:`OWN_PREFIX`; every other session in
  the store was named from outside: by a hook event's ``session_id`` or a session variable;
- an MCP server without an id, at each tool call until it is linked, takes the session named from
  outside that was seen last (``last_seen``) in the same project (the project key: git remote,
  else folder), provided it was seen in the last :data:`LIVE_MINUTES` minutes; from then on it
  stays that session (its read budget, reads and notes go there);
- with none, the call goes to the server's own made-up session, which no other server adopts.

So two projects never link, and a server never adopts another server's own session. Two live
conversations in one project with no ids at all are told apart by recency only: the one whose hook
fired last wins — give the server an id (``JIYI_SESSION_ID``) where that matters.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store.base import Store

OWN_PREFIX = "jiyi-"
LIVE_MINUTES = 10


def own_id() -> str:
    """A new id for a session no one named."""
    return OWN_PREFIX + uuid.uuid4().hex


def live_session(store: Store, project_key: str, at: datetime | None = None) -> str | None:
    """The session an unnamed server of ``project_key`` links to at ``at`` (now); None for none."""
    since = (at or datetime.now(timezone.utc)) - timedelta(minutes=LIVE_MINUTES)
    return store.live_session(project_key, since.isoformat(timespec="microseconds"), OWN_PREFIX)
