"""Text to keys, with no store and no I/O: what an error text means to search.

``signature`` finds an error's key lines and hashes them normalised (rules in ``signature_rules``);
``lexical`` turns any text into full-text terms in every script; ``indexing`` derives what the
store indexes for a record; ``demangle`` reads C++ symbol names; ``redact`` removes secrets;
``regex_cache`` keeps compiled patterns across hook processes; ``commands`` reads a shell command
line (its operation, whether it only reads or changes state) for capture.
"""
