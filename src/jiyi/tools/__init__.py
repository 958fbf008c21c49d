"""The three tools' texts and arguments, byte-exact as docs/spec.md §1 gives them.

``formats`` renders hits, records and notes; ``validation`` checks every argument and names the
field; ``diffs`` checks a fix of kind diff.
"""
