"""Error codes of SPEC §2.

Every tool failure reaches the agent as text: the message on the first line and
``错误码：<CODE>`` on the second. The hierarchy::

    JiyiError
    ├── Unavailable        E_UNAVAILABLE       store cannot be opened, locked, corrupt, disk full
    ├── InvalidArgument    E_INVALID_ARGUMENT  a tool argument failed validation
    ├── NotFound           E_NOT_FOUND         unknown record id
    ├── ReadBudgetSpent    E_READ_BUDGET       the session's read budget is used up
    ├── NotesDisabled      E_NOTES_DISABLED    memory_note while notes = false
    ├── Unauthorized       E_UNAUTHORIZED      team server: no or bad token
    └── Forbidden          E_FORBIDDEN         team server: token of another team
"""

from __future__ import annotations


class JiyiError(Exception):
    code = "E_INTERNAL"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def text(self) -> str:
        """The tool text of this failure, byte-exact as SPEC §2 gives it."""
        return f"{self.message}\n错误码：{self.code}"


class Unavailable(JiyiError):
    code = "E_UNAVAILABLE"

    def __init__(self, reason: str = "") -> None:
        super().__init__("记忆暂不可用")
        # The reason stays out of the tool text (it may hold paths); logs and `doctor` show it.
        self.reason = reason


class InvalidArgument(JiyiError):
    code = "E_INVALID_ARGUMENT"

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"参数无效：{field}：{reason}")
        self.field = field
        self.reason = reason


class NotFound(JiyiError):
    code = "E_NOT_FOUND"

    def __init__(self, ref: str) -> None:
        super().__init__(f"没有这条记录：{ref}")
        self.ref = ref


class ReadBudgetSpent(JiyiError):
    code = "E_READ_BUDGET"

    def __init__(self, budget: int) -> None:
        super().__init__(f"本会话读取额度已用完：{budget} 字符")
        self.budget = budget


class NotesDisabled(JiyiError):
    code = "E_NOTES_DISABLED"

    def __init__(self) -> None:
        super().__init__("记笔记已关闭")


class Unauthorized(JiyiError):
    code = "E_UNAUTHORIZED"

    def __init__(self) -> None:
        super().__init__("团队记忆拒绝访问")


class Forbidden(JiyiError):
    code = "E_FORBIDDEN"

    def __init__(self) -> None:
        super().__init__("团队记忆拒绝访问")
