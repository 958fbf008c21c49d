"""Error codes of docs/spec.md §2.

Every tool failure reaches the agent as text: the message on the first line and
``错误码：<CODE>`` on the second. The hierarchy::

    JiyiError
    ├── Unavailable        E_UNAVAILABLE       store cannot be opened, locked, corrupt, disk full
    │   └── SettingError                       a setting cannot be used (its key on a second line)
    ├── InvalidArgument    E_INVALID_ARGUMENT  a tool argument failed validation
    ├── NotFound           E_NOT_FOUND         unknown record id
    ├── ReadBudgetSpent    E_READ_BUDGET       the session's read budget is used up
    ├── NotesDisabled      E_NOTES_DISABLED    memory_note while notes = false
    ├── Unauthorized       E_UNAUTHORIZED      team server: no or bad token
    └── Forbidden          E_FORBIDDEN         team server: token of another team, or a role that may not
                                               (why on a second line, when the server says)
"""

from __future__ import annotations


class JiyiError(Exception):
    """Any failure of a tool, raised by the structured calls; ``code`` is its docs/spec.md §2 code and
    ``text()`` what the agent reads (the ``*_text`` calls return it instead of raising)::

        try:
            hits = session.search(query)
        except jiyi.JiyiError as exc:
            print(exc.code, exc.text())
    """

    code = "E_INTERNAL"

    def __init__(self, message: str, english: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.english = english or message  # the first line with ``locale = "en"`` (docs/spec.md §2)

    def first_line(self, locale: str = "zh") -> str:
        return self.english if locale == "en" else self.message

    def text(self, locale: str = "zh") -> str:
        """The tool text of this failure, byte-exact as docs/spec.md §2 gives it (``zh``), or its
        English form (``en``)."""
        return f"{self.first_line(locale)}\n{code_line(self.code, locale)}"


def code_line(code: str, locale: str = "zh") -> str:
    return f"error code: {code}" if locale == "en" else f"错误码：{code}"


class Unavailable(JiyiError):
    """The store cannot be opened (locked, corrupt, disk full) or a team server does not answer;
    ``reason`` says why, the tool text does not::

        except jiyi.Unavailable as exc:
            log.warning("memory unavailable: %s", exc.reason)
    """

    code = "E_UNAVAILABLE"

    def __init__(self, reason: str = "") -> None:
        super().__init__("记忆暂不可用", "memory unavailable")
        # The reason stays out of the tool text (it may hold paths); logs and `doctor` show it.
        self.reason = reason


class SettingError(Unavailable):
    """A setting cannot be used (docs/spec.md §2): memory is unavailable until it is fixed, and the
    second line of the text names the ``key``, where the value came from (``source``: a file's
    path or a variable) and what it may be (``allowed``)::

        except jiyi.SettingError as exc:
            print(exc.key, exc.source, exc.allowed)
    """

    def __init__(self, key: str, value: object, source: str, allowed: str) -> None:
        shown = "" if value is None else f" = {value!r}"
        self.detail = f"设置无效：{key}{shown}（来自 {source}），可用的值：{allowed}"
        self.detail_en = f"invalid setting: {key}{shown} (from {source}), allowed: {allowed}"
        super().__init__(self.detail)
        self.key, self.value, self.source, self.allowed = key, value, source, allowed

    def text(self, locale: str = "zh") -> str:
        detail = self.detail_en if locale == "en" else self.detail
        return f"{self.first_line(locale)}\n{detail}\n{code_line(self.code, locale)}"


class InvalidArgument(JiyiError):
    """A tool argument failed validation: ``field`` names the argument, ``reason`` says what is
    wrong with it::

        except jiyi.InvalidArgument as exc:
            print(exc.field, exc.reason)
    """

    code = "E_INVALID_ARGUMENT"

    def __init__(self, field: str, reason: str, english: str | None = None) -> None:
        """``english``: the reason for ``locale = "en"`` (the tools' own checks give one)."""
        field = _one_line(field, 80)
        reason, english = _one_line(reason, 400), _one_line(english or reason, 400)
        super().__init__(f"参数无效：{field}：{reason}", f"invalid argument: {field}: {english}")
        self.field = field
        self.reason = reason
        self.reason_en = english or reason


def _unsendable(c: str) -> bool:
    n = ord(c)
    return (n < 32 and c != "\t") or 0x7F <= n < 0xA0 or 0xD800 <= n < 0xE000


def _one_line(text: str, most: int) -> str:
    """``text`` fit for the one line docs/spec.md §2 gives the message: line breaks become spaces,
    other control characters and lone surrogates (an argument's name is the caller's text and
    cannot be sent as UTF-8 with one) are escaped, and a long one is cut."""
    if "\n" in text or "\r" in text:
        text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    shown = "".join(f"\\u{ord(c):04x}" if _unsendable(c) else c for c in text)
    return shown if len(shown) <= most else shown[: most - 1] + "…"


class NotFound(JiyiError):
    """An id that no record has (``memory_read``, a record asked of the team server); ``ref`` is
    the id as it was asked for::

        except jiyi.NotFound as exc:
            print("no record", exc.ref)
    """

    code = "E_NOT_FOUND"

    def __init__(self, ref: str) -> None:
        super().__init__(f"没有这条记录：{ref}", f"no such record: {ref}")
        self.ref = ref


class ReadBudgetSpent(JiyiError):
    """``memory_read`` once the session's read budget is used up (the ``read_budget`` setting,
    20 000 characters by default)::

        except jiyi.ReadBudgetSpent as exc:
            print("read budget spent:", exc.budget)
    """

    code = "E_READ_BUDGET"

    def __init__(self, budget: int) -> None:
        super().__init__(
            f"本会话读取额度已用完：{budget} 字符", f"read budget of this session spent: {budget} characters"
        )
        self.budget = budget


class NotesDisabled(JiyiError):
    """``memory_note`` while the setting ``notes`` is false (the MCP server then does not offer
    the tool)::

        except jiyi.NotesDisabled:
            pass  # this machine keeps no notes
    """

    code = "E_NOTES_DISABLED"

    def __init__(self) -> None:
        super().__init__("记笔记已关闭", "notes are turned off")


class Unauthorized(JiyiError):
    """The team server refused the token: none was sent, or it is unknown or revoked
    (HTTP 401)::

        except jiyi.Unauthorized:
            print("check team_token")
    """

    code = "E_UNAUTHORIZED"

    def __init__(self) -> None:
        super().__init__("团队记忆拒绝访问", "team memory refused access")


class Forbidden(JiyiError):
    """The team server holds the record for another team, or this token's role may not do what
    was asked (HTTP 403). ``detail`` (``detail_en``), when the server gave one, says why on a
    second line, as ``SettingError`` does; a record of another team gets none, so nothing is told
    about it::

        except jiyi.Forbidden as exc:
            print("refused:", exc.detail or "another team holds this record")
    """

    code = "E_FORBIDDEN"

    def __init__(self, detail: str = "", detail_en: str | None = None) -> None:
        super().__init__("团队记忆拒绝访问", "team memory refused access")
        # The server's words: kept to one line of printable text, as a field name or reason is.
        self.detail = _one_line(detail, 400)
        self.detail_en = _one_line(detail_en or detail, 400)

    def text(self, locale: str = "zh") -> str:
        detail = self.detail_en if locale == "en" else self.detail
        if not detail:
            return super().text(locale)
        return f"{self.first_line(locale)}\n{detail}\n{code_line(self.code, locale)}"
