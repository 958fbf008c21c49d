"""Capture: an agent's tool calls become session state and, when a failure is fixed, records.

``hook`` is ``jiyi hook <agent>``: ``events`` parses each agent's payload, ``fast_path`` applies the
common events with sqlite3 alone, ``results`` applies the rest through the store; ``cleaning``
redacts and caps what is kept and says when a fix is evident; ``auto_record`` builds the
automatic record that ``finisher`` writes after the hook returned.
"""
