"""A corpus of real-format secrets pushed through every way text gets into jiyi (docs/spec.md §6).

Each secret is in the kind of line it turns up in — a log, a command, a config — and goes in as a
hook payload (the command, the output, the error; Claude Code, Codex and Gemini shapes), every
memory_note field and kind of fix, ``jiyi run``'s output, the automatic record of a fixed failure,
and the export file. None of it, whole or in part, may be in any file of the store afterwards
(the database, its write-ahead log and shared memory, the caches) or in the export.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.analysis.redact import redact

from .helpers import hook_env, run_hook, settled

# (label, the line it turns up in, the secret: fake values in each provider's real format)
PEM_RSA = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRvI0MBZhpF\n"
    "Kq8pL2dN7sT4uV6wX8yZ0aB2cD4eF6gH8iJ0kL2mN4oP6qR8sT0uV2wX4yZ6aB8c\n-----END RSA PRIVATE KEY-----"
)
PEM_OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBq7pZ3fW9kYx2LmN4oP6qR8sT0uV2wX4yZ6aB8cD0eFgAAAJgR2kEt\n-----END OPENSSH PRIVATE KEY-----"
)
CASES = [
    ("aws-access-key-id", "aws_access_key_id = AKIAZ7Q3WXYV4K2LMN8P", "AKIAZ7Q3WXYV4K2LMN8P"),
    (
        "aws-secret",
        "export AWS_SECRET_ACCESS_KEY=q8Zr3Lp0Xw5Nv2Bt7Yk1Hm4Jd6Sf9Ga3Ce5Ru8Vi",
        "q8Zr3Lp0Xw5Nv2Bt7Yk1Hm4Jd6Sf9Ga3Ce5Ru8Vi",
    ),
    (
        "aws-secret-yaml",
        "aws_secret_access_key: 'Pk2Wq9Zx4Lm7Nb1Vc5Rt8Yu3Io6As0Df2Gh4Jk9L'",
        "Pk2Wq9Zx4Lm7Nb1Vc5Rt8Yu3Io6As0Df2Gh4Jk9L",
    ),
    (
        "ghp",
        "remote: Invalid username or token ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12",
        "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12",
    ),
    (
        "github-pat",
        "GITHUB_TOKEN=github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
        "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    ),
    (
        "gitlab",
        "git clone https://oauth2:glpat-Xy7zQ2wE9rT4uI1oP6aS@gitlab.com/team/repo.git",
        "glpat-Xy7zQ2wE9rT4uI1oP6aS",
    ),
    (
        "slack",
        "SLACK_BOT_TOKEN=xoxb-2048163279-4096327158-Qw3Er7Ty1Ui5Op9As2Df6Gh0",
        "xoxb-2048163279-4096327158-Qw3Er7Ty1Ui5Op9As2Df6Gh0",
    ),
    (
        "stripe",
        "stripe.api_key = 'sk_live_51HqLyjWDarjtT1zdp7dcXzcAbCdEf0123'",
        "sk_live_51HqLyjWDarjtT1zdp7dcXzcAbCdEf0123",
    ),
    (
        "openai",
        "openai.AuthenticationError: Incorrect API key provided: sk-proj-Ab3dEf7hIj1kLmN5pQr9StU3vWx7Yz1aBc5",
        "sk-proj-Ab3dEf7hIj1kLmN5pQr9StU3vWx7Yz1aBc5",
    ),
    (
        "openai-classic",
        "OPENAI_API_KEY=sk-4fGh8Jk2Lm6Np0Qr4St8Uv2Wx6Yz0Ab4Cd8Ef2Gh6Ij0Kl4Mn",
        "sk-4fGh8Jk2Lm6Np0Qr4St8Uv2Wx6Yz0Ab4Cd8Ef2Gh6Ij0Kl4Mn",
    ),
    (
        "anthropic",
        "anthropic.AuthenticationError: invalid x-api-key "
        "sk-ant-api03-Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2Gg1Ff0Dd-Ss9Aa8Qq7Ww6Ee5Rr4AA",
        "sk-ant-api03-Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2Gg1Ff0Dd-Ss9Aa8Qq7Ww6Ee5Rr4AA",
    ),
    (
        "google",
        "maps request failed: key=AIzaSyD4x9Q2mN7pL0kJ3hG6fD8sA1zX5cV7bN9 denied",
        "AIzaSyD4x9Q2mN7pL0kJ3hG6fD8sA1zX5cV7bN9",
    ),
    (
        "npm",
        "//registry.npmjs.org/:_authToken=npm_Zq8Wx3Ec5Rv7Tb9Yn1Um2Ik4Ol6Pa0Sd8Fg2Hj",
        "npm_Zq8Wx3Ec5Rv7Tb9Yn1Um2Ik4Ol6Pa0Sd8Fg2Hj",
    ),
    (
        "jwt",
        "Cookie: session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    ("pem-rsa", PEM_RSA, "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn"),
    ("pem-openssh", PEM_OPENSSH, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    (
        "url-password",
        "psycopg.OperationalError: connection to postgres://admin:Tr0ub4dor3xKq@db.internal:5432/app failed",
        "Tr0ub4dor3xKq",
    ),
    (
        "bearer",
        "curl -H 'Authorization: Bearer 8f3kQz1LmP9xWv2TnB7cR4yH6jD0sE5a' https://api.example.com",
        "8f3kQz1LmP9xWv2TnB7cR4yH6jD0sE5a",
    ),
    ("basic", "Authorization: Basic YWRtaW46aHVudGVyMjAyNiFTZWNyZXQ=", "YWRtaW46aHVudGVyMjAyNiFTZWNyZXQ="),
    ("entropy", "DATADOG_API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("entropy2", "MY_SERVICE_SECRET=Zx8Qp2Lm9Rt4Vw6Yb1Nc3Hd5", "Zx8Qp2Lm9Rt4Vw6Yb1Nc3Hd5"),
    ("password", "mysql -u root --password=Hq7!zP2#vL9x db", "Hq7!zP2#vL9x"),
    ("curl-user", "curl -u deploy:Wq8zN3xLp5Rt https://ci.example.com", "Wq8zN3xLp5Rt"),
    ("json", '{"client_secret": "Gx4Kp9Wz2Qm7Lr5Vt1Nb8Hc3"}', "Gx4Kp9Wz2Qm7Lr5Vt1Nb8Hc3"),
    # Issue 15: the kinds that reached the store, the export and PostgreSQL before.
    (
        "huggingface",
        "huggingface-cli login --token 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",
        "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",
    ),
    (
        "sendgrid",
        "UnauthorizedError: HTTP Error 401 (key 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)",
        "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",
    ),
    ("twilio-key", "twilio: api key SKf2e7e8201acdb19e90dc0bc0487faa7a expired", "SKf2e7e8201acdb19e90dc0bc0487faa7a"),
    (
        "twilio-token",
        'client = Client("ACfa0b7a153ca4a3aaef3c034e56abc73e", "5aed08a48b51e632862e57a51bd7d5b4")',
        "5aed08a48b51e632862e57a51bd7d5b4",
    ),
    (
        "aws-pair-in-log",
        "DEBUG boto: using credentials AKIA6L4433K1E1R2PB2V:Zvea64dR57HX64ZpvO59Q7kBCvZnZQP5GwI1pMCI from env",
        "Zvea64dR57HX64ZpvO59Q7kBCvZnZQP5GwI1pMCI",
    ),
    (
        "bearer-ya29",
        "curl -H 'Authorization: Bearer ya29.a0AfH6SMBxKq7Lm2NpQr4St8Uv2Wx6Yz0Ab4Cd8Ef2Gh6' https://www.googleapis.com",
        "a0AfH6SMBxKq7Lm2NpQr4St8Uv2Wx6Yz0Ab4Cd8Ef2Gh6",
    ),
    (
        "bearer-dropbox",
        "Authorization: Bearer sl.B6hQvEZU4YUWisJEpmiBZAOj3TBfWz21ccaskm9Ox07fomXtcq",
        "B6hQvEZU4YUWisJEpmiBZAOj3TBfWz21ccaskm9Ox07fomXtcq",
    ),
    ("dotted-password", "./deploy.sh password=Abc.Def.Ghi user=deploy", "Abc.Def.Ghi"),
    ("netrc", "machine nexus.acme.dev login deploy password Wm9x!fQ2pL7r", "Wm9x!fQ2pL7r"),
    ("mysql-p", "mysql -u root -pS3cr3t!Pw9z -h 127.0.0.1 app", "S3cr3t!Pw9z"),
    ("cookie", "> Cookie: sessionid=0cjfe6jvvn8k4rqtdyxjuv6ecarn26a9; theme=dark", "0cjfe6jvvn8k4rqtdyxjuv6ecarn26a9"),
    (
        "pem-json-escaped",
        '{"private_key": "-----BEGIN PRIVATE KEY-----'
        "\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
        "\\nMzEfYyjiWA4R4\\/mPUhD1UZg6Jq0kq0xkdZ5y0u3",
        "mPUhD1UZg6Jq0kq0xkdZ5y0u3",
    ),
    (
        "jiyi-token",
        "JIYI_TEAM_TOKEN=jiyi_Vxsf1zhZwP4l63nzo3V1wUeagj-Yj3n7ufyz2vTq_OU jiyi team sync",
        "jiyi_Vxsf1zhZwP4l63nzo3V1wUeagj-Yj3n7ufyz2vTq_OU",
    ),
    (
        "jiyi-token-bare",
        "401 for https://memory.acme.dev/v1/pull: token jiyi_3Rk-9Zq2Lm7Vt1Wb8Nc5Xy4Hj6Gf0Ds3Pa8Qe2Ru5Ti revoked",
        "jiyi_3Rk-9Zq2Lm7Vt1Wb8Nc5Xy4Hj6Gf0Ds3Pa8Qe2Ru5Ti",
    ),
    (
        "discord-webhook",
        'requests.post("https://discord.com/api/webhooks/985301118282845697/'
        'BQ4TGLQjV206Hs7jrdZVf4CH92y6PCEksBORYfw9n8Ow6dbDqI0EuHjxq1sndWOEcb6g")',
        "BQ4TGLQjV206Hs7jrdZVf4CH92y6PCEksBORYfw9n8Ow6dbDqI0EuHjxq1sndWOEcb6g",
    ),
    (
        "shopify",
        "X-Shopify-Access-Token: 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",
        "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",
    ),
    (
        "digitalocean",
        "doctl auth init --access-token dop_v1_0e00ed2f70514ee63b0f661b6d6117d446d687e420c0189632fa4db13fc75fef",
        "dop_v1_0e00ed2f70514ee63b0f661b6d6117d446d687e420c0189632fa4db13fc75fef",
    ),
]


LINES = [text for _, text, _ in CASES]
LOG = "\n".join(["Exit code 1", *LINES, "ld: undefined symbol deflate"])


def _pieces(secret: str) -> list[str]:
    """The secret and its start and end: a cut secret must not survive either."""
    return [secret, secret[:12], secret[-12:]]


def _leaks(*paths: Path) -> list[str]:
    found = []
    for path in paths:
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        for file in files:
            data = file.read_bytes()
            found += [
                f"{label} in {file.name}" for label, _, s in CASES for piece in _pieces(s) if piece.encode() in data
            ]
    return sorted(set(found))


def test_the_corpus_is_redacted_line_by_line() -> None:
    for label, text, secret in CASES:
        out = redact(text)
        assert not any(piece in out for piece in _pieces(secret)), (label, out)
        assert "[REDACTED:" in out, label


def _note(session: jiyi.Session, title: str, body: str, fix: dict[str, Any], topic: str | None = None) -> None:
    args: dict[str, Any] = {
        "title": title,
        "type": "bugfix",
        "scope": "project",
        "content": {"what": body, "why": body, "where": body, "learned": body},
        "fix": fix,
    }
    if topic:
        args["topic_key"] = topic
    assert session.note(**args).record.hex


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_no_secret_reaches_the_store_or_the_export(tmp_path: Path, jiyi_home: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    script = "\n".join(LINES)

    # Hook payloads: the command, the error, the output, in each agent's shape.
    def hook(payload: dict[str, Any], agent: str = "claude-code") -> None:
        done = run_hook(tmp_path, jiyi_home, {"cwd": str(project), **payload}, agent=agent)
        assert done.returncode == 0 and done.stderr == b"", done
        settled(jiyi_home)  # the automatic record is written after the hook returned

    hook({"hook_event_name": "SessionStart", "session_id": "c1", "source": "startup"})
    hook(
        {
            "hook_event_name": "PostToolUseFailure",
            "session_id": "c1",
            "tool_name": "Bash",
            "tool_input": {"command": script},
            "error": LOG,
            "is_interrupt": False,
        }
    )
    hook(
        {
            "hook_event_name": "PostToolUse",
            "session_id": "c1",
            "tool_name": "Edit",
            "tool_input": {"file_path": str(project / "deploy.env")},
            "tool_response": {"filePath": "deploy.env"},
        }
    )
    # Fixed by another command, with no note: an automatic record names the command and the files.
    hook(
        {
            "hook_event_name": "PostToolUse",
            "session_id": "c1",
            "tool_name": "Bash",
            "tool_input": {"command": script + "\nmake LDLIBS=-lz"},
            "tool_response": {"stdout": LOG, "stderr": ""},
        }
    )
    hook(
        {
            "hook_event_name": "PostToolUse",
            "session_id": "x1",
            "tool_name": "shell",
            "tool_input": {"command": ["bash", "-lc", script]},
            "tool_response": {"stdout": LOG, "stderr": LOG, "exit_code": 1},
        },
        agent="codex",
    )
    hook(
        {
            "hook_event_name": "AfterTool",
            "session_id": "g1",
            "tool_name": "run_shell_command",
            "tool_input": {"command": script},
            "tool_response": {"error": LOG, "llmContent": LOG},
        },
        agent="gemini",
    )

    # `jiyi run`: a failing command whose output carries the corpus, and one whose 4000-character
    # tail starts inside a secret.
    env = hook_env(tmp_path, jiyi_home, JIYI_SESSION_ID="r1")
    cut = CASES[9][1]  # OPENAI_API_KEY=sk-…
    filler = "y" * (4000 - 1 - 20)
    for body in (LOG, cut + "\n" + filler):
        shown = subprocess.run(
            [
                sys.executable,
                "-m",
                "jiyi",
                "run",
                "--",
                sys.executable,
                "-c",
                "import sys; sys.stderr.write(sys.argv[1]); sys.exit(3)",
                body,
            ],
            env=env,
            cwd=project,
            capture_output=True,
            timeout=60,
        )
        assert shown.returncode == 3 and shown.stderr.decode() == body  # passed through unchanged

    # memory_note: every field and every kind of fix, and the session's own failure.
    with jiyi.Memory(cwd=project) as memory:
        session = memory.session(session_id="n1")
        session.observe_tool_result("bash", ok=False, error=LOG, command=script)
        added = [line for text in LINES for line in text.split("\n")]
        diff = f"--- a/.env\n+++ b/.env\n@@ -1 +1,{len(added)} @@\n-x\n" + "".join(f"+{line}\n" for line in added)
        _note(session, "Rotate the leaked credentials", LOG, {"kind": "command", "command": script})
        _note(session, "Patch the env file", LOG, {"kind": "diff", "diff": diff})
        _note(session, "Write the config", LOG, {"kind": "config", "path": "config/secrets.env", "content": script})
        for label, text, _ in CASES:
            if len(text) <= 160 and "\n" not in text:
                _note(session, text, f"{label}: {text}", {"kind": "command", "command": text})
        session.observe_tool_result("bash", ok=True, command="make")

    export = tmp_path / "export.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "export", str(export)], env=env, cwd=project, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done
    exported = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert len(exported) >= 3 + len([c for c in CASES if len(c[1]) <= 160 and "\n" not in c[1]])
    automatic = [r for r in exported if (r["topic_key"] or "").startswith("auto/")]
    assert automatic and automatic[0]["origin"] == "local_auto" and "deploy.env" in automatic[0]["where"]

    # Read through a connection held open, so the write-ahead log is still on disk.
    keeper = sqlite3.connect(jiyi_home / "jiyi.db")
    texts = " ".join(str(row) for row in keeper.execute("SELECT * FROM records"))
    assert texts.count("[REDACTED:") >= len(CASES)
    assert _leaks(jiyi_home, export) == []
    keeper.close()
    assert _leaks(jiyi_home) == []
