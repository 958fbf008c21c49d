"""What a succeeding shell command is to a pending failure (``analysis/commands.py``)."""

from __future__ import annotations

import pytest

from jiyi.analysis.commands import CHANGE, READ_ONLY, SAME, SIBLING, displaces, main_op, read_only, role

CASES = [
    # Looking around is never the fix nor the same operation.
    ("pytest tests/test_api.py", "ls tests", READ_ONLY),
    ("pytest tests/test_api.py", "cat tests/test_api.py", READ_ONLY),
    ("pytest tests/test_api.py", "git status", READ_ONLY),
    ("pytest tests/test_api.py", "git diff HEAD~1 -- src", READ_ONLY),
    ("pytest tests/test_api.py", "git log --oneline -5", READ_ONLY),
    ("pytest tests/test_api.py", "pip show pyyaml", READ_ONLY),
    ("pytest tests/test_api.py", "grep -rn yaml src | head -20", READ_ONLY),
    ("pytest tests/test_api.py", "rg -n 'import yaml'", READ_ONLY),
    ("pytest tests/test_api.py", "find . -name '*.py'", READ_ONLY),
    ("pytest tests/test_api.py", "python --version", READ_ONLY),
    ("pytest tests/test_api.py", "which python3", READ_ONLY),
    ("pytest tests/test_api.py", "env | grep PATH", READ_ONLY),
    ("pytest tests/test_api.py", "python -c 'import yaml'", READ_ONLY),
    ("npm test", "node --version", READ_ONLY),
    ("npm test", "npm ls react", READ_ONLY),
    ("go build ./...", "go env GOPATH", READ_ONLY),
    ("docker build -t app .", "docker images", READ_ONLY),
    ("cargo build", "cargo tree -i serde", READ_ONLY),
    ("npm install", "npm config get proxy", READ_ONLY),
    ("tsc --noEmit", "sed -n '25,32p' src/stores/HookStore.ts", READ_ONLY),
    ("pip install -r requirements.txt", "pip config list", READ_ONLY),
    ("pytest", "git config --get user.name", READ_ONLY),
    # The same operation: the same program keeping every positional word.
    ("pytest tests/test_api.py", "pytest tests/test_api.py", SAME),
    ("pytest tests/test_api.py", "pytest tests/test_api.py -p no:cacheprovider", SAME),
    ("pytest tests/test_api.py", "python -m pytest tests/test_api.py", SAME),
    ("pytest tests/test_api.py", "pip install pyyaml && pytest tests/test_api.py", SAME),
    ("pytest tests/test_api.py", "pytest tests/test_api.py 2>&1 | tail -5", SAME),
    ("cc -o app main.c", "cc -o app main.c -lz", SAME),
    ("make", "make LDLIBS=-lz", SAME),
    ("cd build && make 2>&1 | tail -20", "cd build && make", SAME),
    ("npm run build", "npm run build -- --verbose", SAME),
    ("cargo build", "cargo build --release", SAME),
    ("git push", "git push origin main", SAME),
    ("docker build -t app .", "docker build -t app --no-cache .", SAME),
    ("mvn package", "mvn clean package", SAME),
    ("./gradlew build", "./gradlew build --refresh-dependencies", SAME),
    ("tsc --noEmit", "npx tsc --noEmit", SAME),
    ("pytest", "timeout 60 pytest -x", SAME),
    ("python app.py", "FLASK_ENV=dev python app.py --debug", SAME),
    ("./build.sh", "bash ./build.sh", SAME),
    # A change of state between the failure and its re-run: a step of the fix.
    ("pytest tests/test_api.py", "pip install pyyaml", CHANGE),
    ("npm run build", "npm i -D @types/node", CHANGE),
    ("go build ./...", "go get github.com/gorilla/mux", CHANGE),
    ("cargo build", "cargo add serde", CHANGE),
    ("git push", "git pull --rebase", CHANGE),
    ("make", "make clean", CHANGE),
    ("make", "cmake ..", CHANGE),
    ("pytest", "echo 'testpaths = tests' > pytest.ini", CHANGE),
    ("pytest", "sed -i 's/a/b/' setup.cfg", CHANGE),
    ("pytest", "sudo apt-get install -y libpq-dev", CHANGE),
    ("npm install", "npm config set proxy http://proxy:3128", CHANGE),
    ("docker run --rm app:local", "docker buildx build --platform linux/amd64 -t app:local --load .", CHANGE),
    # The failing program on another target: neither.
    ("pytest tests/test_api.py", "pytest tests/test_other.py", SIBLING),
    ("python app.py", "python other.py", SIBLING),
    ("go test ./pkg/a", "go test ./pkg/b", SIBLING),
]


@pytest.mark.parametrize(("failed", "command", "expected"), CASES)
def test_role(failed: str, command: str, expected: str) -> None:
    assert role(failed, command) == expected


def test_without_a_failing_command_a_success_of_the_tool_is_the_same_operation() -> None:
    assert role(None, "ls") == SAME
    assert role("make", None) == SAME


def test_the_operation_of_a_line_is_its_last_command_before_the_filters() -> None:
    op = main_op("cd build && CC=clang make -j4 2>&1 | tail -20")
    assert op is not None and (op.program, op.positionals) == ("make", [])


def test_a_redirect_to_a_file_writes_and_one_to_dev_null_does_not() -> None:
    assert not read_only("cat a > b")
    assert not read_only("ls | tee listing.txt")
    assert read_only("cat a 2>/dev/null")
    assert read_only("grep -n x src/*.py 2>&1 | head")


def test_unbalanced_quotes_still_parse() -> None:
    assert role("pytest", "grep -n 'oops") == READ_ONLY


def test_a_look_around_that_fails_does_not_take_the_pending_failures_place() -> None:
    assert not displaces("pytest tests/test_api.py", "grep -rn missing_name src")
    assert not displaces("pytest tests/test_api.py", None)  # an edit that did not apply
    assert displaces("pytest tests/test_api.py", "npm run build")
    assert displaces(None, "cat missing.txt")


def test_the_ablation_keeps_shape_and_identity_but_drops_the_lexicon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIYI_CAPTURE_RULES", "off")
    assert role("pytest t.py", "pytest t.py -x") == SAME
    assert role("pytest t.py", "python --version") == READ_ONLY  # a query flag is shape
    assert role("pytest t.py", "ls tests") == CHANGE  # without the lexicon, ls is another program


def test_quotes_subshells_and_substitutions_split_as_the_shell_does() -> None:
    op = main_op("(cd build && make -j4)")
    assert op is not None and (op.program, op.args) == ("make", ["-j4"])
    assert role("pytest", 'cd "$(git rev-parse --show-toplevel)" && pytest -x') == SAME
    assert role("pytest", 'echo "a \\" b" > \'out file.txt\'') == CHANGE
    assert read_only("grep -rn 'a b' src 2>&1 | head -5")
