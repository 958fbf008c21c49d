"""The strength shapes of docs/spec.md §4 ("strengths carry evidence, not presence"), on both
backends: a symbol counts by its rarity in the store, lexical by where its words match, a nearly
identical key line gives a partial error_signature, and the family rules only add on top."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from jiyi import query as query_module
from jiyi import shapes
from jiyi.analysis import glossary, lexical, signature_rules
from jiyi.analysis.signature import analyze, quoted_lines, record_symbols
from jiyi.query import Query
from jiyi.ranking import Hit, rank
from jiyi.shapes import context_share, line_worth, symbol_rarity, symbol_worth
from jiyi.store.base import Indexed, Store

from .test_ranking import NOW, made, put, stamp

CUDA = "RuntimeError: CUDA error: no kernel image is available for execution on the device"


def strengths(hit: Hit) -> dict[str, tuple[float, str]]:
    return {s.name: (s.strength, s.detail) for s in hit.signals}


def searched(store: Store, text: str) -> list[Hit]:
    return rank(store, Query(text=text, project_key="elsewhere"), limit=5, now=NOW)


def test_a_generic_exception_name_alone_cannot_outrank_a_title_match_of_the_message(store: Store) -> None:
    # The record whose title holds the message never pasted the RuntimeError line; the other one
    # shares only the exception type (and a common word or two) with the query.
    title_match = put(
        store,
        made(
            "CUDA error: no kernel image is available for execution on the device",
            what="The wheel was built without kernels for this GPU's compute capability.",
            why="torch wheels ship kernels for a list of architectures only",
            learned="install a build for your card's architecture",
        ),
    )
    put(
        store,
        made(
            "torch.load of a GPU checkpoint on a CPU-only machine",
            what="RuntimeError: Attempting to deserialize object on a CUDA device "
            "but torch.cuda.is_available() is False",
            why="the checkpoint holds CUDA tensors",
            learned="pass map_location='cpu'",
        ),
    )
    hits = searched(store, CUDA)
    assert hits[0].record.hex == title_match.hex
    other = strengths(hits[1])
    assert other["code_symbol"][1] == "RuntimeError" and other["code_symbol"][0] <= 0.1


def test_a_symbol_named_only_in_a_title_finds_its_record(store: Store) -> None:
    # The note's text was cut before the error (a truncated log); its title names it. The look-alike
    # pasted a whole traceback that names the option in passing.
    vllm = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    titled = made(
        f'vLLM "{vllm}": the model does not fit beside the KV cache', what="INFO llm_engine.py:70] # GPU blocks: 0"
    )
    titled = replace(titled, symbols=record_symbols(titled.title, analyze(titled.what)))
    assert "gpu_memory_utilization" in titled.symbols and "gpu_memory_utilization" not in analyze(titled.what).symbols
    put(store, titled)
    put(
        store,
        made(
            "vLLM max seq len larger than the KV cache",
            what="ValueError: The model's max seq len (4096) is larger than the maximum number of tokens that can be "
            "stored in KV cache (2048). Try increasing `gpu_memory_utilization` or decreasing `max_model_len`",
        ),
    )
    hits = searched(store, f"vllm-1  | {vllm} when initializing the engine.")
    assert hits[0].record.hex == titled.hex
    assert "gpu_memory_utilization" in strengths(hits[0])["code_symbol"][1]


def test_a_message_quoted_in_a_title_nearly_matches_the_query_key_line(store: Store) -> None:
    # The note's text starts at another error line (the first a log printed), its title quotes the
    # one that matters; the look-alike's own key line is the same message on another platform.
    emulator = "emulator: ERROR: x86_64 emulation currently requires hardware acceleration!"
    quoted = put(
        store,
        made(
            'Android emulator in a VM "ERROR: x86_64 emulation currently requires hardware acceleration!"',
            what=f"ERROR: resizing partition e2fsck failed with exit code 8\n{emulator}\nEnsure KVM is installed",
            why="no nested virtualization", where="-", learned="enable KVM in the VM",
        ),
    )  # fmt: skip
    assert not any("emulation" in line for line in analyze(quoted.what).normalized)
    put(
        store,
        made(
            "Android emulator on macOS needs HAXM",
            what="emulator: ERROR: x86 emulation currently requires hardware acceleration!\nHAXM is not installed",
            why="-", where="-", learned="install HAXM",
        ),
    )  # fmt: skip
    hits = searched(store, f"{emulator}\nPlease ensure KVM is properly installed and usable.")
    assert hits[0].record.hex == quoted.hex
    near, detail = strengths(hits[0])["error_signature"]
    assert 0.0 < near < 1.0 and detail.startswith("~")


def test_a_line_the_query_prints_that_a_title_quotes_counts_as_an_exact_one(store: Store) -> None:
    # The record's own log printed another line; its title quotes the query's line word for word. A
    # near match that close is the line itself (shapes.NEAR_AS_EXACT), not half of it.
    line = "[coc.nvim] build/index.js not found, please install dependencies and compile coc.nvim by: yarn install"
    quoted = put(
        store,
        made(
            f'"{line}" after a plugin manager ignored the release branch',
            what="Error: javascript bundle not found, please compile code of coc.nvim by esbuild.",
            symbols=(),
        ),
    )
    hits = searched(store, line)
    assert hits[0].record.hex == quoted.hex
    strength, detail = strengths(hits[0])["error_signature"]
    assert detail.startswith("~") and float(detail.split(" ")[0][1:]) >= shapes.NEAR_AS_EXACT
    assert strength == pytest.approx(1.0)  # the only candidate: the line's whole worth


def test_quoted_lines_are_the_messages_a_title_quotes() -> None:
    title = "Keycloak 18+ logout \"Invalid parameter: redirect_uri\" (\u201cParameter 'redirect_uri' unsupported\u201d)"
    lines = quoted_lines(title)
    assert len(lines) == 2 and "redirect_uri" in lines[0]
    assert quoted_lines('pip "x"') == () == quoted_lines("no quote at all")  # a name is no message
    assert quoted_lines('"' + "unterminated and long enough to be a message") == ()


def test_an_identifier_meets_its_words_spelled_otherwise(store: Store) -> None:
    # One program prints the driver's enum, another its camel-case name, a person the words apart.
    driver = put(store, made("Vulkan instance on macOS", what="vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER"))
    put(store, made("Vulkan layers", what="vkCreateInstance failed: VK_ERROR_LAYER_NOT_PRESENT"))
    for query in ("vk::SystemError: vk::createInstanceUnique: ErrorIncompatibleDriver", "incompatible driver on a Mac"):
        hits = searched(store, query)
        assert hits[0].record.hex == driver.hex, query
        assert "incompatible" in strengths(hits[0])["lexical"][1]


def test_an_identifiers_words_are_no_part_of_a_full_match(store: Store) -> None:
    # The query names the identifier whole: a record holding it whole matches fully without its pieces.
    put(store, made("gpu_memory_utilization too low", what="raise gpu_memory_utilization for the KV cache"))
    weights = lexical.QueryWeights.of(
        ["gpu_memory_utilization", "memory"], {"gpu_memory_utilization": 5.0, "memory": 1.0}, frozenset(["memory"])
    )
    assert weights.full == 5.0
    hits = searched(store, "gpu_memory_utilization")
    assert strengths(hits[0])["lexical"][0] == 1.0


def test_a_rare_symbol_outweighs_a_common_one() -> None:
    # The worth of a name falls with the share of records holding it: nothing at 30 % of the store.
    assert symbol_rarity(1, 100_000) == 1.0
    assert 0.0 < symbol_rarity(25_000, 100_000) < 0.05
    assert symbol_rarity(30_000, 100_000) == 0.0
    assert symbol_rarity(40_000, 100_000) == 0.0
    assert symbol_rarity(5, 100_000) > symbol_rarity(500, 100_000) > symbol_rarity(5_000, 100_000)
    # An exception type is a category whatever its count, bare or qualified by the module that raised
    # it; a qualified name of anything else names that thing.
    for name in ("TypeError", "torch.cuda.OutOfMemoryError", "requests.exceptions.ConnectionError"):
        assert symbol_worth(name, 1, 100_000) <= 0.1
    assert symbol_worth("torch.cuda.is_available", 1, 100_000) == 1.0
    # So is an errno-style code: `ETIMEDOUT` on one record of the store says which system call failed,
    # not which download; a name that only starts with E is a name.
    for code in ("ETIMEDOUT", "ECONNRESET", "ENOENT", "ERESOLVE"):
        assert symbol_worth(code, 1, 100_000) <= 0.1
    assert symbol_worth("EventEmitter", 1, 100_000) == symbol_worth("ETIMEDOUT_RETRIES", 1, 100_000) == 1.0


def test_a_rare_shared_symbol_beats_a_common_one_in_the_store(store: Store) -> None:
    common = "load_settings"
    # Ten records name `load_settings`; one names `zstd_decompress_stream`: sharing the rare one
    # is the stronger evidence.
    for i in range(10):
        put(
            store,
            made(f"Settings note {i}", what=f"call {common}() before start {i}", signatures=(), symbols=(common,)),
        )
    rare = put(
        store,
        made(
            "Streaming decompression",
            what="zstd_decompress_stream fails",
            signatures=(),
            symbols=("zstd_decompress_stream",),
        ),
    )
    both = rank(
        store, Query(text=f"`{common}` then `zstd_decompress_stream` broke", project_key="x"), limit=11, now=NOW
    )
    by_hex = {h.record.hex: strengths(h)["code_symbol"][0] for h in both}
    assert by_hex[rare.hex] > max(v for h, v in by_hex.items() if h != rare.hex) > 0


def test_a_symbol_is_no_rarer_than_the_words_it_is_spelled_with(store: Store) -> None:
    # `install` in backticks is taken for a name, and one record holds that name; but the word is in
    # a third of the store's records, so sharing it says as little as sharing the word.
    npm = put(
        store,
        made(
            "npm install -g fails with EACCES on the global prefix",
            what="Running `install` failed: EACCES permission denied on /usr/lib/node_modules",
            signatures=(),
        ),
    )
    assert npm.symbols[0] == "install"
    for i in range(12):
        put(store, made(f"setup note {i}", what=f"run the install step {i} again after the upgrade", symbols=()))
    vcpkg = put(
        store,
        made("vcpkg manifest mode wants no port names", what="vcpkg install zlib requires a manifest", symbols=()),
    )
    hits = searched(store, "vcpkg: `install` requires a manifest in manifest mode, not port names")
    assert hits[0].record.hex == vcpkg.hex
    shared = {h.record.hex: strengths(h)["code_symbol"][0] for h in hits}
    assert shared.get(npm.hex, 0.0) < 0.5
    # A name spelled with a rare word keeps its full worth.
    rare = put(
        store,
        made("zstd", what="call `zstd_decompress_stream` once", signatures=(), symbols=("zstd_decompress_stream",)),
    )
    assert strengths(searched(store, "`zstd_decompress_stream` fails")[0])["code_symbol"] == (
        1.0,
        "zstd_decompress_stream",
    )
    assert searched(store, "`zstd_decompress_stream` fails")[0].record.hex == rare.hex


def test_a_symbol_of_words_found_in_almost_every_error_names_nothing(store: Store) -> None:
    # `errors` of a JSON answer is taken for a name; like the word in lexical (GENERIC), it says
    # nothing about which error it is, however few records hold it yet.
    put(store, made("Node ESM import", what='import failed: {"errors": ["ERR_MODULE_NOT_FOUND"]}', signatures=()))
    sealed = put(store, made("Vault is sealed: unseal it", what="Vault API answers 503: Vault is sealed", symbols=()))
    hits = searched(store, 'HTTP/1.1 503 Service Unavailable\n{"errors":["Vault is sealed"]}')
    assert hits[0].record.hex == sealed.hex
    assert all(strengths(h)["code_symbol"][0] == 0.0 for h in hits)


def test_past_the_lexical_cap_more_of_the_query_still_decides_between_look_alikes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both records hold the message word for word, so both would fill the lexical signal; only one
    # also names the stylesheet the query failed on: it goes first, before the newer one, and the
    # other keeps the lexical signal at its words' share of the first one's.
    message = (
        "Module parse failed: Unexpected token (1:0)\nYou may need an appropriate loader to handle this file type."
    )
    css = put(
        store,
        made(
            "webpack: Module parse failed on an imported stylesheet: add css-loader",
            what=f"ERROR in ./node_modules/widget/index.css\n{message}",
            signatures=(),
            symbols=(),
            updated=stamp(0.01),
        ),
    )
    js = put(
        store,
        made("webpack: Module parse failed on new syntax in a dependency", what=message, signatures=(), symbols=()),
    )
    for i in range(12):  # stylesheets are common in the store: their words weigh less than the message's
        put(store, made(f"theme {i}", what=f"index.css of theme {i} loaded", signatures=(), symbols=()))

    def ranked() -> tuple[list[str], float, float]:
        hits = rank(store, Query(text=f"ERROR in ./index.css\n{message}", project_key="elsewhere"), limit=5, now=NOW)
        return [h.record.hex for h in hits[:2]], strengths(hits[0])["lexical"][0], strengths(hits[1])["lexical"][0]

    order, first, second = ranked()
    assert order == [css.hex, js.hex]
    assert first == 1.0 and 0.5 < second < 1.0
    monkeypatch.setattr(shapes, "LEXICAL_SHARE_POWER", 0)  # both capped: only the tie-break tells them apart
    assert ranked() == ([css.hex, js.hex], 1.0, 1.0)


def test_past_the_lexical_cap_records_holding_the_same_words_keep_the_same_strength(store: Store) -> None:
    # One note of the error says much more around it than the other: they hold the same words of
    # the query, so their lexical strengths stay equal and the context (here, recency) decides.
    message = "ld: error: undefined symbol: deflateBound"
    short = put(
        store,
        made("undefined symbol deflateBound: link zlib", what=message, signatures=(), symbols=(), updated=stamp(1)),
    )
    wordy = put(
        store,
        made(
            "undefined symbol deflateBound: link zlib into the archive module after the toolchain upgrade",
            what=f"{message}\nthe archive module of the storage service was built by the new toolchain",
            signatures=(),
            symbols=(),
            updated=stamp(30),
        ),
    )
    for i in range(12):  # the linker's words are common in the store; deflateBound is not
        put(store, made(f"link {i}", what=f"ld: error: undefined symbol: sym{i}", signatures=(), symbols=()))
    hits = searched(store, message)
    assert [h.record.hex for h in hits[:2]] == [short.hex, wordy.hex]
    assert strengths(hits[0])["lexical"][0] == strengths(hits[1])["lexical"][0] == 1.0


def test_a_question_finds_the_record_about_its_word_before_one_that_names_it_once(store: Store) -> None:
    # Both titles name nbconvert once; one record is about it throughout, the other about LaTeX
    # packages, with nbconvert as the command it ran. As in BM25, saying a word again counts.
    about = put(
        store,
        made(
            "nbconvert 5 fails to import on Jinja2 3.1",
            what="ImportError: cannot import name 'contextfilter' from 'jinja2' (nbconvert/exporters)",
            why="nbconvert 5 uses contextfilter, which Jinja2 3.1 removed",
            learned="upgrade nbconvert (6 or later) or pin jinja2<3.1 where nbconvert 5 must stay",
            signatures=(),
            symbols=(),
            updated=stamp(0.01),  # older: without the repeats the other one would go first
        ),
    )
    put(
        store,
        made(
            "PDF export via nbconvert: LaTeX Error: File tcolorbox.sty not found",
            what="! LaTeX Error: File `tcolorbox.sty' not found.",
            why="the TeX distribution lacks the packages the template uses",
            learned="install texlive-latex-extra",
            signatures=(),
            symbols=(),
        ),
    )
    hits = rank(store, Query(text="nbconvert dependency issue", project_key="elsewhere"), limit=5, now=NOW)
    assert hits[0].record.hex == about.hex


def test_a_chinese_question_finds_the_english_record_by_its_words_glosses(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = put(
        store,
        made(
            "Refusing to merge unrelated histories after linking a new remote",
            what="fatal: refusing to merge unrelated histories",
            learned="pull once with --allow-unrelated-histories: git pull origin main --allow-unrelated-histories",
            signatures=(),
            symbols=(),
            updated=stamp(0.01),
        ),
    )
    newer = put(store, made("git push rejected: the remote has newer commits", what="! [rejected] main (fetch first)"))
    question = "git拒绝合并无关的历史"  # git refuses to merge unrelated history
    hits = rank(store, Query(text=question, project_key="elsewhere"), limit=5, now=NOW)
    assert hits[0].record.hex == answer.hex
    # The detail says which Chinese word each English one stood for.
    assert {"merge=合并", "unrelated=无关"} <= set(strengths(hits[0])["lexical"][1].split(","))
    # Without the dictionary only `git` is shared, and the record that names it in its title wins.
    monkeypatch.setattr(glossary, "english", lambda bigrams, runs=(): {})
    hits = rank(store, Query(text=question, project_key="elsewhere"), limit=5, now=NOW)
    assert hits[0].record.hex == newer.hex


def test_a_near_copy_of_a_line_of_no_information_is_no_evidence(store: Store) -> None:
    # pytest's `=== ERRORS ===` and a Markdown `**Errors:**` are one word apart from nothing: the same
    # word, nearly the same line, and no sign of the same failure.
    put(
        store, made("Azure CLI wants az login", what="**Errors:**\nPlease run 'az login' to setup account.", symbols=())
    )
    hits = searched(store, "==== ERRORS ====\nScopeMismatch: You tried to access the function scoped fixture")
    assert all(strengths(h)["error_signature"][0] == 0.0 for h in hits)


LONG = 'psql: error: FATAL: role "deploy" does not exist in cluster main while restoring the nightly dump'


def test_a_near_identical_key_line_scores_between_zero_and_one(store: Store) -> None:
    record = put(store, made("Create the role before restoring", what=LONG, symbols=()))
    exact = strengths(searched(store, LONG)[0])["error_signature"]
    assert exact == (1.0, record.signatures[0])
    near_text = LONG.replace("nightly", "weekly")
    assert analyze(near_text).signatures != record.signatures  # not the same signature
    hits = searched(store, near_text)
    strength, detail = strengths(hits[0])["error_signature"]
    assert hits[0].record.hex == record.hex
    assert 0.0 < strength < 1.0
    similarity, digest = detail.split(" ")
    assert similarity.startswith("~0.") and digest.startswith("sha256:")
    # Far from it: nothing.
    other = searched(store, 'psql: error: FATAL: database "shop" does not exist')
    assert all(strengths(h)["error_signature"][0] == 0.0 for h in other)


def test_a_near_key_line_counts_at_its_share_of_the_best_evidence(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A look-alike prints a line one word longer than the query's and nothing else of it; another
    # record holds that line's words but its rarest, and the query's next line too: the nearly equal
    # line counts by how much of the query its record holds.
    near = put(store, made("Create the role before restoring", what=LONG, symbols=()))
    hint = "HINT: the standby pgbouncer pool maps deploy onto replicator"
    put(
        store,
        made(
            "psql: error: FATAL: role does not exist in cluster main while restoring the dump",
            what=hint,
            symbols=(),
        ),
    )
    query = LONG.replace(" while", "") + "\n" + hint

    def near_strength() -> float:
        hit = next(h for h in searched(store, query) if h.record.hex == near.hex)
        strength, detail = strengths(hit)["error_signature"]
        assert detail.startswith("~0.")
        return strength

    shared = near_strength()
    monkeypatch.setattr(shapes, "NEAR_SHARE_POWER", 0)  # counted whole whatever else the query says
    assert 0.0 < shared < near_strength()


def test_a_shared_symbol_counts_at_its_share_of_the_best_evidence(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One record names the query's module file and little else of the query; the other prints the
    # query's message about another file: the shared name counts by how much of the query its record holds.
    named = put(
        store,
        made(
            "gfortran cannot find a module",
            what="Fatal Error: Can't open module file 'netcdf.mod' for reading at (1): No such file or directory",
        ),
    )
    message = put(
        store,
        made(
            "gfortran: module file created by a different version of GNU Fortran",
            what="Fatal Error: Cannot read module file 'typesizes.mod' opened at (1), because it was created "
            "by a different version of GNU Fortran",
        ),
    )
    query = (
        "Fatal Error: Cannot read module file 'netcdf.mod' opened at (1), because it was created by a "
        "different version of GNU Fortran"
    )

    def ranked() -> tuple[list[str], float]:
        hits = searched(store, query)
        strength, detail = strengths(next(h for h in hits if h.record.hex == named.hex))["code_symbol"]
        assert detail == "netcdf.mod"
        return [h.record.hex for h in hits], strength

    order, shared = ranked()
    assert order[0] == message.hex
    monkeypatch.setattr(shapes, "SYMBOL_SHARE_POWER", 0)  # counted whole whatever else the query says
    whole = ranked()[1]
    assert 0.0 < shared < whole


def test_a_near_line_without_its_rarest_word_is_another_error(store: Store) -> None:
    # The same loader message about another library: everything but the one word that names the
    # library is shared, and that word decides the fix.
    loader = "error while loading shared libraries: {}: cannot open shared object file: No such file or directory"
    libssl = loader.format("libssl.so.1.1")
    record = put(store, made("Install the OpenSSL 1.1 runtime", what=libssl, symbols=()))
    for i in range(20):  # the loader's words are common in the store, the library names are not
        put(store, made(f"other {i}", what=loader.format(f"lib{i}x.so"), symbols=()))
    put(store, made("Chromium needs NSS", what="chrome: missing libnss3 and libgbm", symbols=()))
    libnss = libssl.replace("libssl.so.1.1", "libnss3.so")
    assert all(strengths(h)["error_signature"][0] == 0.0 for h in searched(store, libnss))
    # The same library with a word of the message left out keeps its partial match.
    near = searched(store, libssl.replace(" or directory", ""))
    assert near[0].record.hex == record.hex and 0.0 < strengths(near[0])["error_signature"][0] < 1.0


def test_an_exact_key_line_is_worth_its_information() -> None:
    # A line of the store's common words (a banner over every start-up failure) is little evidence
    # that two failures are one; a line holding a word found in one record only is full evidence.
    idf = {"application": 1.0, "start": 1.2, "failed": 0.5, "libnss3": 8.0, "so": 1.0}
    weights = lexical.QueryWeights.of(list(idf), idf)
    full = 1.5 * lexical.idf(1, 4000)
    banner = line_worth(frozenset({"application", "failed", "to", "start"}), weights, full)
    rare = line_worth(frozenset({"libnss3", "so", "cannot", "open"}), weights, full)
    assert 0.0 < banner < 0.25
    assert 0.8 < rare <= 1.0  # libnss3 alone is worth two thirds of a full match
    assert line_worth(frozenset({"error", "failed", "n"}), weights, full) == 0.0  # generic words and masks


def test_a_banner_line_matched_exactly_loses_to_the_record_that_holds_the_message(
    store: Store, rules_off: None
) -> None:
    # Rules off: with them, Spring's banner is a header and its message the key line (signature_rules).
    banner = "APPLICATION FAILED TO START"
    port = "Web server failed to start. Port 8080 was already in use."
    bean_text = f"{banner}\nA component required a bean that could not be found"
    bean = put(store, made("Spring bean not found", what=bean_text))
    right = put(store, made("Port 8080 already in use: stop the other server", what=port, symbols=()))
    for i in range(30):  # the banner's words are common in the store
        put(store, made(f"start-up {i}", what=f"application {i} failed to start", symbols=()))
    query = f"***************************\n{banner}\n***************************\n\nDescription:\n\n{port}"
    hits = searched(store, query)
    assert hits[0].record.hex == right.hex
    shown = {h.record.hex: strengths(h)["error_signature"][0] for h in hits}
    assert 0.0 < shown.get(bean.hex, 0.0) < 1.0


@pytest.fixture
def rules_off() -> Iterator[None]:
    signature_rules.RULES = False
    try:
        yield
    finally:
        signature_rules.RULES = True


def test_rules_off_still_finds_an_exact_key_line(store: Store, rules_off: None) -> None:
    # With every family rule off a linker error is no longer rewritten to its canonical form, and the
    # linker's symbol patterns are gone; the same error met again still has the same signature.
    error = "/usr/bin/ld: main.o: in function `main':\nmain.c:(.text+0x1c): undefined reference to `deflate'"
    assert signature_rules.canonical("undefined reference to `deflate'", "undefined reference to `deflate'") is None
    found = analyze(error)
    record = put(store, replace(made(what=error), signatures=found.signatures, symbols=found.symbols))
    again = error.replace("main.o", "zpipe.o").replace("0x1c", "0x2f")
    hits = searched(store, again)
    assert hits and hits[0].record.hex == record.hex
    assert strengths(hits[0])["error_signature"] == (1.0, record.signatures[0])


def test_context_signals_reorder_only_what_is_equally_on_topic(store: Store) -> None:
    # The right record holds every rare word of the query but is old, from a note, from another os;
    # the other shares two of them and is fresh, trusted, well used and from the query's os.
    right = put(
        store,
        made(
            "node-gyp cannot find Python executable when npm builds native addons",
            what="gyp ERR! find Python - Python is not set from command line or npm configuration",
            why="node-gyp needs a Python 3 interpreter to configure the build",
            learned="set npm config python to the interpreter's path",
            origin="note",
            environment={"os": "windows"},
            updated=stamp(200),
        ),
    )
    put(
        store,
        made(
            "pip cannot build a wheel for a native extension: Python headers missing",
            what="fatal error: Python.h: No such file or directory",
            why="the python3-dev package was not installed",
            learned="install python3-dev",
            origin="human",
            sources=6,
            used_success=4,
            environment={"os": "linux"},
        ),
    )
    query = Query(
        text="node-gyp cannot find Python executable for native addons",
        project_key="elsewhere",
        environment={"os": "linux"},
    )
    hits = rank(store, query, limit=5, now=NOW)
    assert len(hits) == 2
    assert hits[0].record.hex == right.hex
    # The weaker candidate keeps its details but its context counts by its share of the best topical score.
    other = {s.name: s for s in hits[1].signals}
    assert other["environment"].detail == "os=linux"
    assert 0 < other["environment"].strength < 1.0
    best = {s.name: s for s in hits[0].signals}
    assert best["trust"].strength == pytest.approx(0.4)


def test_context_share_falls_steeply_below_the_best_topical_score() -> None:
    assert context_share(0.3, 0.3) == 1.0
    assert 0.6 < context_share(0.38, 0.4) < 0.7  # 5 % less on topic: two thirds of the context
    assert 0.4 < context_share(0.36, 0.4) < 0.45  # 10 % less: under half
    assert context_share(0.1, 0.4) < 0.001
    assert context_share(0.0, 0.4) == 0.0
    assert context_share(0.2, 0.0) == 1.0


def test_an_os_match_cannot_decide_between_look_alikes_one_of_which_holds_more_of_the_query(store: Store) -> None:
    # Both hold the loader's message word for word; only one also holds the stylesheet the query
    # failed on. The other is from the query's os, newer, trusted and well used: in proportion to its
    # share of the best topical score, that context decided.
    message = "Module parse failed: Unexpected token (1:0)\nYou may need an appropriate loader to handle this file type"
    sheet = "> .emoji-mart, .emoji-mart * { box-sizing: border-box; line-height: 1.15; }"
    css = put(
        store,
        made(
            "webpack: Module parse failed on an imported stylesheet (emoji-mart.css): add css-loader",
            what=f"ERROR in ./node_modules/emoji-mart/css/emoji-mart.css 1:0\n{message}\n{sheet}",
            learned="add style-loader and css-loader for .css files to the webpack rules",
            origin="note",
            environment={"os": "windows"},
            updated=stamp(30),
        ),
    )
    put(
        store,
        made(
            "webpack 4: Module parse failed on optional chaining in a dependency",
            what=f"ERROR in ./node_modules/widget/index.js 12:8\n{message}\n> const x = a?.b;",
            learned="upgrade to webpack 5 or transpile the dependency with babel-loader",
            origin="human",
            sources=6,
            used_success=3,
            environment={"os": "linux"},
        ),
    )
    for i in range(12):  # the loader's words are common in the store; the stylesheet's are not
        put(store, made(f"theme {i}", what=f"Module parse failed in theme {i}: loader", signatures=(), symbols=()))
    query = Query(
        text=f"ERROR in ./node_modules/emoji-mart/css/emoji-mart.css 1:0\n{message}\n{sheet}",
        project_key="elsewhere",
        environment={"os": "linux"},
    )
    hits = rank(store, query, limit=5, now=NOW)
    assert hits[0].record.hex == css.hex
    # The other keeps its context's details, at a small part of their strength.
    other = {s.name: s for s in hits[1].signals}
    assert other["environment"].detail == "os=linux" and 0 < other["environment"].strength < 0.5


def test_a_question_in_another_form_of_the_records_words_finds_it(store: Store) -> None:
    # Both records name the package; only one says the question's `crashes`, as `crashed`. The other
    # is newer, and would come first on the package alone.
    said = put(
        store,
        made(
            "pycairo crashed at import",
            what="Segmentation fault (core dumped) on import cairo",
            why="two libcairo builds loaded",
            learned="uninstall the conda cairo",
            updated=stamp(30),
        ),
    )
    put(
        store,
        made(
            "pycairo wheel build needs the cairo headers",
            what="Package cairo was not found in the pkg-config search path",
            why="no libcairo2-dev",
            learned="apt-get install libcairo2-dev",
            updated=stamp(1),
        ),
    )
    hits = searched(store, "pycairo crashes when I import it")
    assert hits[0].record.hex == said.hex
    assert "crashes~crashed" in strengths(hits[0])["lexical"][1].split(",")


NGINX_OPEN = (
    '2014/05/14 17:50:52 [crit] 7#0: *111 open() "/var/lib/nginx/proxy/4/00/0000000004" failed (13: Permission '
    'denied) while reading upstream, client: 10.9.4.52, server: example.org, request: "GET /x HTTP/1.1", '
    'upstream: "http://127.0.0.1:8080/x", host: "example.org"'
)


def test_the_folders_of_a_failing_path_name_what_failed(store: Store) -> None:
    # The right record's log was cut before the path; its title names the folder. The other holds
    # every word of the message after the path, and is newer.
    right = put(
        store,
        made(
            "nginx may not write its proxy temp folder /var/lib/nginx/proxy",
            what="open() failed (13: Permission denied)",
            why="the proxy temp folder belongs to another user",
            learned="chown the folder to the worker user",
            updated=stamp(30),
        ),
    )
    put(
        store,
        made(
            "connect() failed (13: Permission denied) while reading upstream",
            what="connect() to unix:/run/app.sock failed (13: Permission denied) while reading upstream",
            why="the socket's owner is not the worker's user",
            learned="set the socket's owner",
            updated=stamp(1),
        ),
    )
    hits = searched(store, NGINX_OPEN)
    assert hits[0].record.hex == right.hex
    assert {"nginx", "proxy"} <= set(strengths(hits[0])["lexical"][1].split(","))


# bench/data/clusters_s.jsonl c4410 and c4411: two causes of one Zigbee2MQTT message, and a log of
# the second stamped on the same day and hour as the first's record.
ZIGBEE_LOG = "\n".join(
    f"Zigbee2MQTT:error 2022-08-15 17:03:04: {line}"
    for line in (
        "Error while starting zigbee-herdsman",
        "Failed to start zigbee",
        "Exiting...",
        "Error: Error while opening serialport 'Error: Error: No such file or directory, cannot open /dev/ttyUSB0'",
    )
)


def test_a_logs_dates_and_times_are_not_words_of_the_query(store: Store) -> None:
    locked = put(
        store,
        made(
            "Zigbee2MQTT cannot lock the serial port: another process holds it",
            what="Zigbee2MQTT:error 2022-08-15 17:38:31: Error: Error while opening serialport 'Error: Error "
            "Resource temporarily unavailable Cannot lock port'",
            why="another process holds the port",
            learned="stop the other process",
        ),
    )
    missing = put(
        store,
        made(
            "Zigbee2MQTT: the serial port's device path does not exist",
            what="Zigbee2MQTT:error 2020-10-24 16:55:43: Error: Error while opening serialport 'Error: Error: "
            "No such file or directory, cannot open /dev/ttyACM0'",
            why="serial.port names a device that is not there",
            learned="point serial.port at /dev/serial/by-id/...",
        ),
    )
    assert "2022" not in lexical.terms(Query(text=ZIGBEE_LOG).lexical_text())
    hits = searched(store, ZIGBEE_LOG)
    assert [h.record.hex for h in hits[:2]] == [missing.hex, locked.hex]
    assert not {"2022", "08", "15", "17"} & set(strengths(hits[1])["lexical"][1].split(","))


# bench/data/clusters_y.jsonl c7206 and c7207 (cut): two Hugo template failures, and a log of the
# second (c7207's fourth occurrence) that the first outranked on words alone.
HUGO_LOG = (
    'Error: add site dependencies: load resources: loading templates: "/site/themes/gallery/layouts/partials/'
    'menu.html:12:1": parse failed: template: partials/menu.html:12: function "page" not defined'
)


def hugo_records(store: Store) -> tuple[str, str]:
    old_binary = put(
        store,
        made(
            'Hugo "parse failed: template: partials/head.html:NN: function \\"hugo\\" not defined" (or '
            '"function \\"return\\" / \\"page\\" not defined")',
            what='Error: "xxx/themes/syna/layouts/partials/head.html:48:1": parse failed: template: '
            'partials/head.html:48: function "hugo" not defined',
            why="template functions such as hugo, return or page only exist in newer Hugo releases",
            learned="install a Hugo release that meets the theme's minimum version",
        ),
    )
    removed_template = put(
        store,
        made(
            'Hugo >= 0.125: "execute of template failed: html/template:partials/head.html:NN: no such template '
            '\\"_internal/google_analytics_async.html\\""',
            what='Error: error building site: render: failed to render pages: render of "page" failed: execute '
            "of template failed: html/template:_default/single.html:86:14: no such template "
            '"_internal/google_analytics_async.html"',
            why="Hugo removed the embedded async Google Analytics template",
            learned="call _internal/google_analytics.html instead",
        ),
    )
    return old_binary.hex, removed_template.hex


def test_a_record_saying_the_querys_words_in_its_order_holds_its_message(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both records hold `page`, `template`, `failed` and `html`; only one says `parse failed`,
    # `function page` and `not defined` as the log does (shapes.phrase_share).
    old_binary, removed_template = hugo_records(store)
    hits = searched(store, HUGO_LOG)
    assert [h.record.hex for h in hits[:2]] == [old_binary, removed_template]
    monkeypatch.setattr(shapes, "PHRASE_WEIGHT", 0.0)
    assert searched(store, HUGO_LOG)[0].record.hex == removed_template


def test_a_querys_word_pairs_leave_out_words_it_weighs_at_nothing_and_generic_pairs() -> None:
    weights = {"version": 2.0, "solving": 4.0, "failed": 1.0, "build": 1.0, "any": 0.0, "match": 3.0}
    sequence = ["match", "any", "version", "solving", "failed", "build", "failed", "version", "solving"]
    pairs = shapes.WordPairs.of(sequence, weights)
    assert pairs.following == {"version": {"solving": 3.0}, "solving": {"failed": 2.5}, "failed": {"version": 1.5}}
    # The share counts each pair by its weight, only pairs said in that order, of words held.
    record = Indexed.of("version solving", "build failed version", [])
    held = ["version", "solving", "failed", "build"]
    assert shapes.phrase_share(pairs, record, held) == pytest.approx((3.0 + 1.5) / 7.0)
    assert shapes.phrase_share(pairs, record, ["version", "solving"]) == pytest.approx(3.0 / 7.0)


def test_a_chinese_questions_filler_weighs_its_rarity_among_chinese_records(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store of mostly English records, and a few Chinese notes asking how to fix other installs:
    # `请问` (may I ask), `如何处理` (how to deal with it) and `安装` (install) are on every one of them.
    for n in range(40):
        put(store, made(f"Link library{n} with -l{n}", what=f"ld: undefined symbol widget_{n}_init"))
    for tool in ("npm", "conda", "brew", "docker", "maven"):
        put(
            store,
            made(
                f"请问{tool}安装失败如何处理",
                what=f"请问 {tool} 安装一直失败，如何处理？换了几个源也不行",
                learned=f"换用官方源后重新安装 {tool}",
                signatures=(),
                symbols=(),
            ),
        )
    answer = put(
        store,
        made(
            "pip install pyaudio fails: portaudio.h: No such file or directory",
            what="src/pyaudio/device_api.c:9:10: fatal error: portaudio.h: No such file or directory",
            learned="install the PortAudio headers first: apt install portaudio19-dev",
            signatures=(),
            symbols=(),
        ),
    )
    question = "安装pyaudio失败，换了几个源也都无法安装，请问如何处理"
    monkeypatch.setattr(query_module, "BIGRAM_POPULATION_MIN", 0)  # the store is small: its five notes count
    assert searched(store, question)[0].record.hex == answer.hex
    # Rare as a package's name in the whole store, the filler outweighed `pyaudio` and put a note first.
    monkeypatch.setattr(query_module, "_bigram_idf", lambda terms, doc_counts, total: {})
    assert searched(store, question)[0].record.hex != answer.hex


def test_a_bigrams_rarity_is_taken_among_at_least_a_hundred_records_and_all_that_hold_it() -> None:
    idf_of = query_module._bigram_idf
    counts = {"问题": 30, "解密": 1, lexical.BIGRAM_TEXT: 60}
    got = idf_of(["问题", "解密", "pyaudio", "未见"], counts, 10_000)
    assert got == {"问题": lexical.idf(30, 100), "解密": lexical.idf(1, 100)}  # 60 marked, counted as 100
    counts[lexical.BIGRAM_TEXT] = 500
    assert idf_of(["问题"], counts, 10_000) == {"问题": lexical.idf(30, 500)}
    # A store of fewer than a hundred records: all of them.
    assert idf_of(["问题"], {"问题": 30, lexical.BIGRAM_TEXT: 35}, 40) == {"问题": lexical.idf(30, 40)}
    # A store indexed before the mark: as many as hold the query's commonest bigram, at least.
    assert idf_of(["问题"], {"问题": 300}, 10_000) == {"问题": lexical.idf(300, 300)}


# The texts of c5912 in bench/data (ngrok): the record's log ends in a bare `error` field and the
# query's box starts with a bare `ERROR`; both are key lines worth nothing.
NGROK_RECORD = (
    "[Error: failed to connect session: Usage of ngrok requires a verified account and authtoken.\n"
    "Sign up for an account: https://dashboard.ngrok.com/signup\n"
    "Install your authtoken: https://dashboard.ngrok.com/get-started/your-authtoken error_code: ERR_NGROK_4018] {\n"
    "  code: 'GenericFailure',\n"
    "  error"
)
NGROK_QUERY = (
    "│ ERROR \n│ \n│ ngrok failed to start: failed to connect session: Usage of ngrok requires a verified "
    "account and authtoken.\n│ Sign up for an account: https://dashboard.ngrok.com/signup"
)


def test_a_worthless_line_both_print_does_not_hide_the_message_nearly_matching(store: Store) -> None:
    record = put(store, made("Verify the ngrok account and install its authtoken", what=NGROK_RECORD))
    query = analyze(NGROK_QUERY)
    assert len(query.normalized) == 2 and len(analyze(NGROK_RECORD).normalized) == 2  # each a bare `error` too
    hit = next(h for h in searched(store, NGROK_QUERY) if h.record.hex == record.hex)
    strength, detail = strengths(hit)["error_signature"]
    # The message, not the bare line (similarity 1.00, worth 0), is what nearly matches.
    assert 0.0 < strength < 1.0
    assert detail.startswith("~0.")


PULSE = "Connection failure: Connection refused\npa_context_connect() failed: Connection refused"


def test_of_the_key_lines_a_record_shares_the_one_worth_most_counts(store: Store) -> None:
    # Both lines of the query are the record's key lines; the first says only `connection refused`.
    put(store, made("A generic connection refusal", what="Connection failure: Connection refused", symbols=()))
    record = put(store, made("Start the PulseAudio server for this user", what=PULSE, symbols=()))
    _, strong = analyze(PULSE).signatures
    hit = next(h for h in searched(store, PULSE) if h.record.hex == record.hex)
    strength, detail = strengths(hit)["error_signature"]
    assert detail == strong
    assert strength == 1.0
