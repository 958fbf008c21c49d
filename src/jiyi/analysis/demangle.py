"""C++ (Itanium ABI) symbol names as their source spells them, so linkers' wordings of one symbol meet.

GNU ld and lld print ``undefined reference to `foo::bar(int)'``; ld64 before Xcode 15, a
``--no-demangle`` link, the dynamic loader (``undefined symbol: _ZN3foo3barEi``, PyTorch extensions'
favourite) and some CI logs print the mangled name. This rewrites mangled names in a text to the
demangled spelling, with the C++ runtime's own ``__cxa_demangle`` (libstdc++ or libc++abi, through
ctypes) or, when no runtime library can be loaded, one ``c++filt`` call for the whole text. A name
neither can read stays as it is.

Imported only when a text holds ``_Z``: the hook path does not pay for ctypes.
"""

from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

# A mangled name standing alone: after a quote, a space, a colon or at the start; not inside a
# section name (`.text._ZN3foo3barEv`) or its group tag (`[_ZN...]`), which the signature drops.
# ld64 adds Mach-O's `_` in front (`__ZN3foo3barEi`).
MANGLED = re.compile(r"(?<![\w.$\[])_?(_Z[A-Za-z0-9_$]+(?:\.[A-Za-z0-9_.]+)?)", re.ASCII)
MAX_NAME = 1024  # longer is no symbol a person reads
MAX_NAMES = 64  # a log naming thousands: the first are enough for a signature and its symbols
_LIBRARIES = {
    "darwin": ("libc++abi.dylib", "libc++.1.dylib"),
    "linux": ("libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"),
}

# libiberty (c++filt, GNU ld) spells out the standard abbreviations (`Ss`) that the C++ runtimes and
# LLVM print short: c++filt's names are made to read as __cxa_demangle's.
_SHORT = [
    (f"std::basic_{name}<char, std::char_traits<char>{alloc} >", f"std::{name}")
    for name, alloc in (("string", ", std::allocator<char>"), ("istream", ""), ("ostream", ""), ("iostream", ""))
]

Demangler = Callable[[str], "str | None"]


def _short(name: str) -> str:
    for long, short in _SHORT:
        name = name.replace(long, short)
    return name


def _runtime() -> Demangler | None:
    """``__cxa_demangle`` of the first C++ runtime library that loads, else None."""
    if sys.platform == "win32":
        return None
    names = _LIBRARIES.get(sys.platform, _LIBRARIES["linux"])
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None

        return functools.partial(_call, fn, free)
    return None


def _call(fn: Any, free: Any, mangled: str) -> str | None:
    status = ctypes.c_int(0)
    out = fn(mangled.encode("ascii"), None, None, ctypes.byref(status))
    if not out:
        return None
    try:
        return ctypes.string_at(out).decode("utf-8", "replace") if status.value == 0 else None
    finally:
        free(out)


@functools.lru_cache(maxsize=1)
def _demangler() -> Demangler | None:
    return _runtime()


def _cxxfilt(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt")
    if tool is None or not names:
        return {}
    try:
        done = subprocess.run(
            [tool], input="\n".join(names) + "\n", capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    out = done.stdout.splitlines()
    if done.returncode != 0 or len(out) != len(names):
        return {}
    return {n: _short(d) for n, d in zip(names, out, strict=True) if d and d != n}


@functools.lru_cache(maxsize=4096)
def demangle(mangled: str) -> str | None:
    """The source spelling of one mangled name (``_ZN3foo3barEi`` → ``foo::bar(int)``), or None."""
    name = mangled[1:] if mangled.startswith("__Z") else mangled
    if not name.startswith("_Z") or len(name) > MAX_NAME:
        return None
    fn = _demangler()
    if fn is not None:
        return fn(name)
    return _cxxfilt([name]).get(name)


def in_text(text: str) -> str:
    """``text`` with every standalone mangled name replaced by its demangled spelling."""
    found = list(dict.fromkeys(m.group(1) for m in MANGLED.finditer(text)))[:MAX_NAMES]
    if not found:
        return text
    if _demangler() is not None:
        readable = {n: d for n in found if (d := demangle(n))}
    else:  # one c++filt process for the whole text, not one per name
        readable = _cxxfilt([n for n in found if len(n) <= MAX_NAME])
    if not readable:
        return text
    return MANGLED.sub(lambda m: readable.get(m.group(1), m.group(0)), text)
