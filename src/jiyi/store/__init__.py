"""Persistence only (no capture, team or ranking): the ``Store`` interface and its backends.

``base`` is the interface and the policy both backends share (look-up bounds, what a purge deletes,
a record's write-side values); ``sqlite/`` is the embedded default, ``postgres/`` the team
database, each split the same way (connection or database, search, lexical, sessions, store,
migrations); ``reindex`` re-signs a store after the signature rules or the terms change.
"""
