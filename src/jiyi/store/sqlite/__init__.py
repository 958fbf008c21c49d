"""The embedded store: one SQLite file under ``JIYI_HOME``.

``connection`` opens it (WAL, migrations) and guards every statement; ``store`` is ``SQLiteStore``
(records), built from ``search`` (look-ups), ``sessions`` (session state) and ``lexical`` (the
terms' version); ``statements`` holds the session statements the hook's fast path runs too;
``migrations`` the schema as named, recorded steps.
"""
