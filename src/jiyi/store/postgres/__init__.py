"""The team database: PostgreSQL through psycopg 3, one schema, every row scoped to a team.

``database`` is the pool, its migrations (``migrations``) and tokens; ``store`` is ``PgStore``,
built from ``search``, ``lexical`` and ``sessions``, writing ``rows``; ``team`` holds the server's
operations beyond ``Store`` (merging a push, changes by cursor, forget, verification);
``upgrade`` brings older full-text terms up to date.
"""
