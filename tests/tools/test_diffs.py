from __future__ import annotations

import pytest

from jiyi.tools import diffs

GOOD = """diff --git a/Makefile b/Makefile
index 83db48f..bf269f4 100644
--- a/Makefile
+++ b/Makefile
@@ -1,3 +1,3 @@
 CC = cc
-LDLIBS =
+LDLIBS = -lz
 all: main
@@ -10 +10,2 @@
 clean:
+\trm -f main
\\ No newline at end of file
"""


def test_a_git_diff_parses() -> None:
    assert diffs.parse(GOOD) == ["b/Makefile"]


def test_new_file_and_several_files() -> None:
    text = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert diffs.parse(text) == ["b/new.txt", "b/x"]


@pytest.mark.parametrize(
    "text",
    [
        "not a diff at all",
        "--- a/x\n@@ -1 +1 @@\n-a\n+b\n",  # no +++
        "--- a/x\n+++ b/x\n",  # no hunk
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n",  # counts do not add up
        "--- a/x\n+++ b/x\n@@ one @@\n-a\n",
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n*a\n+b\n",
        "@@ -1 +1 @@\n-a\n+b\n",
    ],
)
def test_malformed_diffs_say_what_is_wrong(text: str) -> None:
    with pytest.raises(diffs.DiffError) as info:
        diffs.parse(text)
    assert str(info.value)
