"""The secrets ``redact`` knows by their format alone: issuers' documented prefixes with the length
and alphabet that follow, as (kind, pattern). The match itself is the secret (or its group ``s``).

Each pattern starts with a literal where it can, which lets ``re`` skip ahead ~10x faster than a
leading ``\\b``; ``redact.find_secrets`` checks that the character before a match is no part of a word.
Kept apart from the rules that judge a key and its value (``redact``), which need no new entry for a
new issuer: tests/data/secrets.txt names every kind both find.
"""

from __future__ import annotations

FORMATS: tuple[tuple[str, str], ...] = (
    ("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_\w{30,255})"),
    ("gitlab-token", r"gl(?:pat|dt|ft|soat|rt|cbt|ptt|imt|oas|agent)-[\w-]{20,}"),
    ("aws-access-key", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe-key", r"[rs]k_(?:live|test)_[0-9A-Za-z]{20,}"),
    ("anthropic-key", r"sk-ant-[\w-]{20,}"),
    ("openai-key", r"sk-(?:proj-|svcacct-|admin-)?(?=[\w-]{0,255}\d)[\w-]{20,}"),  # a digit: not a-kebab-name
    ("google-api-key", r"AIza[\w-]{35}"),
    ("google-client-secret", r"GOCSPX-[\w-]{28}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi-token", r"pypi-AgE[\w-]{50,}"),
    # Issue 15's leaks and their kin: issuers' documented prefixes with their length and alphabet.
    ("huggingface-token", r"hf_(?=[A-Za-z0-9]{0,40}[A-Z])[A-Za-z0-9]{30,40}(?![\w-])"),
    ("sendgrid-api-key", r"SG\.[\w-]{16,32}\.[\w-]{16,64}"),
    ("twilio-api-key", r"SK[0-9a-fA-F]{32}(?![0-9A-Za-z])"),
    # The account SID is an id; the auth token after it (`Client(sid, token)`, `-u sid:token`) is not.
    ("twilio-auth-token", r"AC[0-9a-f]{32}[\"']?[ \t]*[,:][ \t]*[\"']?(?P<s>[0-9a-f]{32})(?![0-9A-Za-z])"),
    # An access key id and its secret side by side, as credential files and debug logs print them.
    ("aws-secret-key", r"A(?:KIA|SIA)[A-Z0-9]{16}[\"']?[ \t]*[:,;|=/][ \t]*[\"']?(?P<s>[A-Za-z0-9/+]{40})(?![\w/+=])"),
    ("jiyi-token", r"jiyi_(?=[\w-]{0,64}[A-Z0-9])[\w-]{40,64}(?![\w-])"),
    ("shopify-token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("digitalocean-token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("vault-token", r"hv[sbr]\.[\w-]{24,}"),
    ("linear-api-key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("postman-api-key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-\d)?(?![\w-])"),
    ("grafana-token", r"(?:glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"),
    ("new-relic-key", r"NR(?:AK|AA|II)-[A-Z0-9]{27}"),
    ("supabase-token", r"sbp_[a-f0-9]{40}"),
    ("figma-token", r"figd_[\w-]{40,}"),
    ("mailgun-api-key", r"key-[0-9a-f]{32}(?![0-9A-Za-z])"),
    ("square-token", r"sq0(?:atp|csp)-[\w-]{22,43}"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("doppler-token", r"dp\.(?:st|sa|ct|pt|scim|audit)\.[\w.-]{20,}"),
    ("pulumi-token", r"pul-[a-f0-9]{40}"),
    ("flyio-token", r"fo1_[\w-]{43}"),
    ("rubygems-key", r"rubygems_[a-f0-9]{48}"),
    ("dockerhub-token", r"dckr_pat_[\w-]{27}"),
    ("groq-key", r"gsk_[A-Za-z0-9]{52}"),
    ("replicate-token", r"r8_[A-Za-z0-9]{37}"),
    ("telegram-bot-token", r"bot(?P<s>[0-9]{8,10}:AA[\w-]{33})(?![\w-])"),  # api.telegram.org/bot<token>/
    ("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.[\w-]{60,}"),
    # The edge check inside the pattern: else `eyJeyJeyJ…` rescans the run from every eyJ.
    ("jwt", r"eyJ(?<![\w-]eyJ)[\w-]{5,}\.eyJ[\w-]{5,}\.[\w-]*"),
)
