"""``jiyi ui``: the review page (docs/spec.md §7), a local web page to browse, search and curate memory.

Server-rendered (Starlette, Jinja2 with autoescape, plain CSS, no JavaScript), safe by default:
bound to loopback, a fresh token per launch (``guards``: the token, the Host header against DNS
rebinding, the Origin of every POST and a form field against cross-site requests). The parts: the
app and its start (``app``, ``serve``), the pages that read (``pages``) and the forms that change
(``actions``), the labels in both locales (``labels``). Needs the ``ui`` extra; nothing here is
imported by ``jiyi hook`` or ``jiyi mcp``.
"""
