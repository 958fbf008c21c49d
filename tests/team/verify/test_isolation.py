"""The replay sandbox attacked for real: a record's fix command tries to reach the runner's
sockets, read its secrets, write outside its checkout, fork, spin and flood, as a member of the
team could write it. Each attack runs contained (it must fail) and, where it is harmless, also
uncontained, to show that the attack itself works and the test can tell the two apart."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jiyi.analysis.signature import analyze
from jiyi.records import Fix, Record, Reproduction, new_hex
from jiyi.team.verify import replay as replay_module
from jiyi.team.verify.isolation import Limits, Sandbox
from jiyi.team.verify.replay import ReplayResult, replay

from ...helpers import CHECK_PY, MYLIB_ERROR, git_repo, require_sandbox

PG_SOCKET = Path("/var/run/postgresql/.s.PGSQL.5432")


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def record_of(origin: Path, commit: str, command: str, fix_command: str) -> Record:
    return Record(
        hex=new_hex(),
        title="mylib is missing",
        type="bugfix",
        scope="project",
        what=MYLIB_ERROR,
        why="never added",
        where="mylib.py",
        learned="add it",
        project="origin",
        project_key=str(origin),
        fix=Fix("command", command=fix_command),
        signatures=analyze(MYLIB_ERROR).signatures,
        reproduction=Reproduction(command, str(origin), commit),
    )


def attack(tmp_path: Path, script: str, *, limits: Limits | None = None, contained: bool = True) -> ReplayResult:
    """Replay a record whose reproduction fails as recorded and whose fix runs ``script`` (Python,
    committed as attack.py) and then fails: its last output lines come back in the detail."""
    origin = tmp_path / f"origin-{uuid.uuid4().hex[:8]}"
    commit = git_repo(origin, {"check.py": CHECK_PY, "attack.py": script})
    record = record_of(origin, commit, "python3 check.py", "python3 attack.py; exit 1")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    sandbox = Sandbox(contained=contained, limits=limits or Limits())
    result = replay(record, workdir=work, sandbox=sandbox, allow_local_repos=True, timeout_s=120)
    assert result.stage == "fix-failed", result.detail  # the attack ran: the fix command's exit 1
    return result


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[tuple[socket.socket, socket.socket]]:
    """A Unix socket in the runner's folders and a TCP port on its 127.0.0.1, both listening."""
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "runner.sock"))
    unix.listen()
    tcp = socket.create_server(("127.0.0.1", 0))
    for sock in (unix, tcp):
        sock.setblocking(False)
    try:
        yield unix, tcp
    finally:
        unix.close()
        tcp.close()


def _accepted(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def test_sockets_of_the_runner_cannot_be_reached(
    tmp_path: Path, listeners: tuple[socket.socket, socket.socket]
) -> None:
    unix, tcp = listeners
    unix_family, inet = int(socket.AF_UNIX), int(socket.AF_INET)
    targets = {
        "runner-unix": (unix_family, str(tmp_path / "runner.sock")),
        "runner-tcp": (inet, ("127.0.0.1", tcp.getsockname()[1])),
        "pg-unix": (unix_family, str(PG_SOCKET)),
        "pg-tcp": (inet, ("127.0.0.1", 5432)),
    }
    script = f"""
import socket
reached = []
for name, (family, address) in {targets!r}.items():
    s = socket.socket(family)
    s.settimeout(3)
    try:
        s.connect(address)
        reached.append(name)
    except OSError:
        pass
print("reached:", ",".join(reached) or "nothing")
"""
    contained = attack(tmp_path, script)
    assert contained.detail.endswith("reached: nothing"), contained.detail
    assert not _accepted(unix) and not _accepted(tcp)

    uncontained = attack(tmp_path, script, contained=False)
    assert "runner-unix,runner-tcp" in uncontained.detail, uncontained.detail
    assert _accepted(unix) and _accepted(tcp)


@pytest.mark.skipif(not PG_SOCKET.exists() or shutil.which("psql") is None, reason="no local PostgreSQL and psql")
def test_psql_on_the_runner_s_database_socket_fails(tmp_path: Path) -> None:
    query = "select 'answer:' || 4242 * 2"
    script = f"""
import subprocess
for host in ("/var/run/postgresql", "127.0.0.1"):
    done = subprocess.run(["psql", "-h", host, "-U", "postgres", "-d", "test", "-tAc", {query!r}],
                          capture_output=True, text=True, timeout=20)
    print(host, done.returncode, done.stdout.strip() or "-")
"""
    contained = attack(tmp_path, script)
    assert "answer:8484" not in contained.detail, contained.detail
    uncontained = attack(tmp_path, script, contained=False)
    assert "/var/run/postgresql 0 answer:8484" in uncontained.detail, uncontained.detail


def test_files_of_the_runner_are_not_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"PLANTED-KEY-{uuid.uuid4().hex}"
    runner_home = tmp_path / "runner-home"
    (runner_home / ".ssh").mkdir(parents=True)
    key = runner_home / ".ssh" / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n", encoding="utf-8")
    key.chmod(0o600)
    monkeypatch.setenv("HOME", str(runner_home))
    shadow_readable = os.access("/etc/shadow", os.R_OK)
    script = f"""
import os
seen = []
try:
    os.kill({os.getpid()}, 0)
    seen.append("runner-pid")
except OSError:
    pass
for path in ("/root", "/var/lib/postgresql", "/run", "/var/run", "/etc/ssl/private"):
    try:
        seen.append(path + ":" + str(len(os.listdir(path))))
    except OSError:
        pass
for path in ("/etc/shadow", {str(key)!r}):
    try:
        seen.append(open(path).read().split(chr(10))[-2][:60])
    except (OSError, IndexError):
        pass
print("seen:", " ".join(seen) or "nothing")
"""
    contained = attack(tmp_path, script)
    assert contained.detail.endswith("seen: nothing"), contained.detail
    assert secret not in contained.detail and ":" not in contained.detail.split("seen:")[1]

    uncontained = attack(tmp_path, script, contained=False)
    assert secret in uncontained.detail and "runner-pid" in uncontained.detail, uncontained.detail
    shadow_last = Path("/etc/shadow").read_text().splitlines()[-1][:60] if shadow_readable else None
    assert shadow_last is None or shadow_last in uncontained.detail


def test_writes_outside_the_checkout_do_not_persist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner_home = tmp_path / "runner-home"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("kept\n", encoding="utf-8")
    runner_home.mkdir()
    monkeypatch.setenv("HOME", str(runner_home))
    tag = uuid.uuid4().hex
    targets = [runner_home / ".bashrc", tmp_path / "outside", Path(f"/tmp/jiyi-escape-{tag}")]
    targets += [Path(f"/dev/shm/jiyi-escape-{tag}"), Path(f"/var/tmp/jiyi-escape-{tag}")]
    # `rm -r -f` is not on the list of dangerous commands: containment, not the list, must hold.
    script = f"""
import subprocess
wrote = []
for path in {[str(t) for t in targets]!r}:
    try:
        with open(path, "a") as f:
            f.write("owned")
        wrote.append(path)
    except OSError:
        pass
subprocess.run(["rm", "-r", "-f", {str(victim)!r}])
print("wrote:", len(wrote))
"""
    try:
        attack(tmp_path, script)  # /tmp and /dev/shm take writes: its own, gone with it
        assert [t for t in targets if t.exists()] == []
        assert (victim / "keep").read_text() == "kept\n"

        uncontained = attack(tmp_path, script, contained=False)
        assert uncontained.detail.endswith(f"wrote: {len(targets)}"), uncontained.detail
        assert not victim.exists()
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_links_the_command_leaves_do_not_lead_the_runner_out(tmp_path: Path) -> None:
    """The runner cleans the checkout up after the sandbox ends; a link left there that names a
    folder of the runner must not have that folder's mode changed."""
    victim = tmp_path / "victim"
    victim.mkdir()
    victim.chmod(0o755)
    script = f"import os\nos.symlink({str(victim)!r}, 'link')\nprint('linked')\n"
    attack(tmp_path, script)
    assert victim.stat().st_mode & 0o777 == 0o755


FORK_STORM = """
import os, time
forked = 0
for _ in range(120):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    forked += 1
print("forked:", forked)
"""


def test_a_fork_storm_is_bounded(tmp_path: Path) -> None:
    contained = attack(tmp_path, FORK_STORM, limits=Limits(processes=24))
    forked = int(contained.detail.rsplit("forked: ", 1)[1])
    assert 0 < forked < 24, contained.detail
    uncontained = attack(tmp_path, FORK_STORM, contained=False)
    assert uncontained.detail.endswith("forked: 120"), uncontained.detail


def _alive(tag: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and tag.encode() in (proc / "cmdline").read_bytes():
                state = (proc / "stat").read_text().rsplit(") ", 1)[1][0]
                if state != "Z":
                    found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_an_endless_loop_is_killed_at_the_time_limit_with_all_it_started(tmp_path: Path) -> None:
    tag = f"jiyi-spin-{uuid.uuid4().hex}"
    # A spinning shell and a sleeper that left the process group and session: the namespace goes whole.
    command = f"sh -c 'while :; do :; done' {tag} & setsid sleep 1000 {tag} & wait"
    origin = tmp_path / "origin"
    commit = git_repo(origin, {"check.py": CHECK_PY})
    record = record_of(origin, commit, command, "true")
    started = time.monotonic()
    result = replay(record, workdir=tmp_path, allow_local_repos=True, timeout_s=4)
    assert time.monotonic() - started < 20
    assert (result.stage, "during the reproduction" in result.detail) == ("timeout", True), result.detail
    for _ in range(50):
        if not _alive(tag):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"still running after the time-out: {_alive(tag)}")


def test_cpu_time_memory_and_file_size_are_limited(tmp_path: Path) -> None:
    script = """
import subprocess, time
started = time.monotonic()
spin = subprocess.run(["sh", "-c", "while :; do :; done"])
print("spin", spin.returncode, round(time.monotonic() - started))
try:
    bytearray(1 << 30)
    print("memory ok")
except MemoryError:
    print("memory refused")
big = subprocess.run(["sh", "-c", "head -c 5000000 /dev/zero > big"])
print("file", big.returncode, __import__("os").path.getsize("big"))
"""
    result = attack(tmp_path, script, limits=Limits(cpu_s=2, memory_mib=512, file_mib=1))
    lines = result.detail.split(": ", 1)[1].split(" | ")
    spin = lines[0].split()
    assert spin[:2] == ["spin", "-9"] and int(spin[2]) < 10, result.detail  # SIGXCPU, then SIGKILL
    assert lines[1:] == ["memory refused", f"file 153 {1024 * 1024}"], result.detail  # SIGXFSZ at 1 MiB


def test_huge_output_is_capped_when_read(tmp_path: Path) -> None:
    result = attack(tmp_path, "import sys\nfor _ in range(3000):\n    sys.stdout.write('x' * 100000 + '\\n')\n")
    assert len(result.detail) <= replay_module.DETAIL_MAX
    flood = ["sh", "-c", "head -c 300000000 /dev/zero | tr '\\0' x"]
    started = time.monotonic()
    run = replay_module._run(flood, tmp_path, {"PATH": os.environ["PATH"]}, time.monotonic() + 60)
    assert run.code == 0 and time.monotonic() - started < 30
    kept = replay_module.OUTPUT_HEAD + replay_module.OUTPUT_TAIL
    assert kept <= len(run.output) < kept + 100
    assert f"… {300_000_000 - kept} bytes left out …" in run.output


def test_ci_has_a_working_sandbox() -> None:
    """On CI (which installs bubblewrap) the sandbox works; elsewhere this test is skipped with why."""
    done = subprocess.run(["bwrap", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("bubblewrap ")
