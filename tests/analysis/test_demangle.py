"""C++ demangling: the wordings of one missing symbol meet, whichever linker or loader printed it.

The mangled names are real: PyTorch extensions' loader errors (pytorch/extension-cpp#103, #121,
xingyizhou/CenterNet#271, GAP-LAB-CUHK-SZ/Total3DUnderstanding#49, lufficc/SSD#125).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from jiyi.analysis import demangle
from jiyi.analysis.signature import analyze

needs_runtime = pytest.mark.skipif(demangle._demangler() is None, reason="no C++ runtime library loads here")

REAL = [
    ("_ZN5torch3jit11parseSchemaERKSsb", "torch::jit::parseSchema(std::string const&, bool)"),
    ("_ZN3c105ErrorC1ENS_14SourceLocationERKSs", "c10::Error::Error(c10::SourceLocation, std::string const&)"),
    ("_ZN3c1019UndefinedTensorImpl10_singletonE", "c10::UndefinedTensorImpl::_singleton"),
    ("_ZN2at19UndefinedTensorImpl10_singletonE", "at::UndefinedTensorImpl::_singleton"),
    (
        "_ZN5torch7LibraryC1ENS0_4KindESsSt8optionalIN3c1011DispatchKeyEEPKcj",
        "torch::Library::Library(torch::Library::Kind, std::string, std::optional<c10::DispatchKey>, char const*, "
        "unsigned int)",
    ),
]


@needs_runtime
@pytest.mark.parametrize(("mangled", "readable"), REAL)
def test_real_names_demangle_as_the_linker_prints_them(mangled: str, readable: str) -> None:
    assert demangle.demangle(mangled) == readable


@needs_runtime
def test_the_mach_o_underscore_is_dropped() -> None:
    assert demangle.demangle("__ZN4zlib7deflateEv") == "zlib::deflate()"


def test_what_is_not_a_mangled_name_stays() -> None:
    assert demangle.demangle("_Zbogus") is None
    assert demangle.demangle("deflate") is None
    text = "undefined reference to `_Zbogus' in _Zfoo"
    assert demangle.in_text(text) == text


@needs_runtime
def test_section_names_are_left_for_the_signature_to_drop() -> None:
    text = "t.cc:(.text._ZN11highwayhash10ThreadPoolC2Ei[_ZN11highwayhash10ThreadPoolC5Ei]+0x18f): x `_ZN3foo3barEi'"
    assert demangle.in_text(text) == (
        "t.cc:(.text._ZN11highwayhash10ThreadPoolC2Ei[_ZN11highwayhash10ThreadPoolC5Ei]+0x18f): x `foo::bar(int)'"
    )


@needs_runtime
def test_c_plus_plus_filt_gives_the_same_names() -> None:
    names = [m for m, _ in REAL]
    assert demangle._cxxfilt(names) == dict(REAL) or not demangle.shutil.which("c++filt")


# One missing symbol as GNU ld, lld, ld64 and a --no-demangle link word it.
WORDINGS = [
    "/usr/bin/ld: main.o: in function `main':\nmain.cpp:(.text+0x1d): undefined reference to `foo::bar(int)'\n"
    "collect2: error: ld returned 1 exit status",
    "/usr/bin/ld: main.o: in function `main':\nmain.cpp:(.text+0x2f): undefined reference to `_ZN3foo3barEi'\n"
    "collect2: error: ld returned 1 exit status",
    "ld.lld: error: undefined symbol: foo::bar(int)\n>>> referenced by main.cpp:5\n>>>               main.o:(main)",
    "ld.lld: error: undefined symbol: _ZN3foo3barEi\n>>> referenced by main.cpp:9",
    'Undefined symbols for architecture x86_64:\n  "__ZN3foo3barEi", referenced from:\n      _main in main.o\n'
    "ld: symbol(s) not found for architecture x86_64",
    'Undefined symbols for architecture arm64:\n  "foo::bar(int)", referenced from:\n      _main in main.o\n'
    "ld: symbol(s) not found for architecture arm64",
]


@needs_runtime
def test_every_linker_wording_of_one_symbol_shares_a_signature() -> None:
    first = set(analyze(WORDINGS[0]).signatures)
    assert first
    for text in WORDINGS[1:]:
        assert first & set(analyze(text).signatures), text


@needs_runtime
def test_a_loader_error_names_the_symbol_as_the_linker_does() -> None:
    loader = (
        "ImportError: /root/miniconda3/lib/python3.11/site-packages/extension_cpp/_C.cpython-311-x86_64-linux-gnu.so:"
        " undefined symbol: _ZN5torch3jit11parseSchemaERKSsb"
    )
    assert "torch::jit::parseSchema" in analyze(loader).symbols


def test_other_symbols_do_not_meet() -> None:
    other = WORDINGS[0].replace("foo::bar(int)", "foo::baz(int)")
    assert not set(analyze(WORDINGS[0]).signatures) & set(analyze(other).signatures)


def test_a_text_without_a_mangled_name_does_not_import_ctypes() -> None:
    code = (
        "import sys; from jiyi.analysis.signature import analyze; "
        'analyze("undefined reference to `deflate\'\\ncollect2: error: ld returned 1 exit status"); '
        "print('jiyi.analysis.demangle' in sys.modules, 'ctypes' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
