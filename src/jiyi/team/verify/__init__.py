"""Replay verification: does a record's fix really fix its failure?

``replay`` checks out the failing commit, runs the failing command, applies the fix and runs the
check; ``isolation`` runs those commands in a bubblewrap sandbox with resource limits, and
``cgroup`` bounds their processes where the runner is root.
"""
