"""What the team server and its clients share: the limits of a request (docs/team-protocol.md).

The server refuses a body over ``MAX_BODY`` (``server/limits.py``: ``read_body``); the client cuts
its pushes under it (``client/outbox.py``) and sends at most ``PUSH_BATCH`` records, or forgets, a
request.
"""

from __future__ import annotations

MAX_BODY = 1024 * 1024  # bytes of a request body the server takes
PUSH_BATCH = 100  # records a push, hexes a forget request
