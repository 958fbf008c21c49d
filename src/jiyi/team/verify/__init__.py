"""Replay verification: does a record's fix really fix its failure?

``replay`` checks out the failing commit, runs the failing command, applies the fix and runs the
check; ``isolation`` confines what a replayed command may reach.
"""
