"""This machine's side of team memory (docs/team-protocol.md).

``http`` is one method per endpoint; ``outbox`` pushes what this machine wrote; ``forget`` sends its
forgets and pulls the team's; ``sync`` pulls by cursor and runs a whole sync, in the background
for the MCP server; ``state`` keeps cursors and back-off in the local store.
"""
