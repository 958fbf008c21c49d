"""Team memory: the server on PostgreSQL, this machine's client, and replay verification.

``protocol`` holds what both sides share (request limits); ``client/`` syncs the local store with
the server; ``server/`` is the Starlette app; ``verify/`` replays records on a runner.
"""
