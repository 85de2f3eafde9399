"""Isolation and access: namespaces never leak; private files; the daemon's token; transcripts.

Namespaces are checked through every tool at the domain level (recall incl. explain,
browse_keys, hub counts / memory_count, read_key, read_memory, dismiss, correct,
confirm_memory, forget, related_to), each refusal leaving the store unchanged.
"""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from keymem.admin.invariants import check_invariants, store_digest
from keymem.errors import KeymemError, NotFound
from tests.reliability.conftest import populate

SECRET_WORDS = "zebulon quasar marmalade"


def _world(graph: Any) -> tuple[Any, dict[str, str]]:
    w = populate(graph)
    # the same key text in both namespaces; a hub in "private" only
    for i in range(4):
        graph.remember(content=f"{SECRET_WORDS} fact {i}", keys=["shared topic", "Falcon"], namespace="private")
    r = graph.remember(content="a public fact about the shared topic", keys=["shared topic"])
    ids = {"secret": w.ids["secret"], "secret_key": w.keys["secret"], "public": r.memory_id,
           "public_key": r.keys[0].key_id, "alice": w.ids["alice"], "alice_key": w.keys["alice"]}
    return w, ids


def test_recall_and_browse_stay_in_their_namespace(graph: Any) -> None:
    _, ids = _world(graph)
    private_keys = {r["id"] for r in graph.store.raw("MATCH (k:Key) WHERE k.namespace = 'private' RETURN k.id AS id")}
    for query in ("Falcon", "shared topic", SECRET_WORDS, "Bob secret project"):
        rec = graph.recall(query=query, explain=True)
        assert not {k.key_id for k in rec.keys} & private_keys, query
        assert rec.memory is None or SECRET_WORDS not in rec.memory.content and rec.memory.memory_id != ids["secret"]
        assert set(rec.namespaces or {}) <= {"default"}
        if rec.memory:
            assert not {k.key_id for k in rec.memory.connected_keys} & private_keys
    browse = graph.browse_keys(namespace="default", limit=500)
    assert not {k.key_id for k in browse.keys} & private_keys
    shared = next(k for k in browse.keys if k.key == "shared topic")
    assert shared.memory_count == 1 and not shared.is_hub  # the 4 private memories do not count
    hubs = graph.browse_keys(namespace="default", hubs_only=True)
    assert all(k.key_id not in private_keys for k in hubs.keys)
    private_shared = next(k for k in graph.browse_keys(namespace="private").keys if k.key == "shared topic")
    assert private_shared.key_id != shared.key_id and private_shared.memory_count == 4 and private_shared.is_hub
    # lexical search is per namespace too
    rec = graph.recall(query=SECRET_WORDS, namespace="default")
    assert rec.memory is None or SECRET_WORDS not in rec.memory.content
    direct = graph.recall_direct(query=SECRET_WORDS, namespace="default", reinforce=False).dump()
    assert SECRET_WORDS not in json.dumps(direct)


CROSS_CALLS = {
    "read_key": lambda g, i: g.read_key(key_id=i["secret_key"], namespace="default"),
    "read_memory": lambda g, i: g.read_memory(memory_id=i["secret"], namespace="default"),
    "dismiss": lambda g, i: g.dismiss(memory_id=i["secret"], key_id=i["secret_key"], namespace="default"),
    "dismiss_foreign_key": lambda g, i: g.dismiss(memory_id=i["alice"], key_id=i["secret_key"]),
    "correct": lambda g, i: g.correct(memory_id=i["secret"], content="overwritten", namespace="default"),
    "confirm_memory": lambda g, i: g.confirm_memory(memory_id=i["secret"], evidence="x", namespace="default"),
    "forget": lambda g, i: g.forget(memory_id=i["secret"], namespace="default"),
    "related_to": lambda g, i: g.remember(content="links across", keys=["x"], related_to=[i["secret"]]),
    "batch_related_to": lambda g, i: g.remember_batch([{"content": "links across", "keys": ["x"],
                                                        "related_to": [i["secret"]]}]),
}


@pytest.mark.parametrize("call", list(CROSS_CALLS))
def test_ids_from_another_namespace_are_refused(graph: Any, call: str) -> None:
    _, ids = _world(graph)
    before = store_digest(graph)
    with pytest.raises(NotFound) as err:
        CROSS_CALLS[call](graph, ids)
    assert SECRET_WORDS not in str(err.value) and "Falcon" not in str(err.value)
    assert store_digest(graph) == before
    assert check_invariants(graph) == []


def test_duplicates_and_key_merges_are_per_namespace(graph: Any) -> None:
    a = graph.remember(content="The office is in Osaka", keys=["office location"])
    b = graph.remember(content="The office is in Osaka", keys=["office location"], namespace="work")
    assert not b.duplicate and a.memory_id != b.memory_id
    assert a.keys[0].key_id != b.keys[0].key_id
    assert graph.read_memory(memory_id=b.memory_id).namespace == "work"


# -- files -----------------------------------------------------------------------------------------
def _loose(root: Path) -> list[str]:
    bad = []
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & 0o077:
            bad.append(f"{p.relative_to(root)} {oct(st.st_mode & 0o777)}")
    return bad


def test_store_files_are_private(graph: Any, settings: Any) -> None:
    populate(graph)
    graph.store.backup("test")
    graph.store.copy_to(settings.data_dir / "snap" / "copy.kuzu")
    assert oct(settings.data_dir.stat().st_mode & 0o777) == "0o700"
    assert _loose(settings.data_dir) == []


def test_daemon_files_and_socket_are_private(daemon: Any) -> None:
    from keymem.server.client import DaemonClient

    c = DaemonClient(daemon.settings(), start=False)
    try:
        c.call("remember", {"content": "a fact for the log", "keys": ["log"]})
    finally:
        c.close()
    d = daemon.data_dir
    present = {p.name for p in d.iterdir()}
    assert {"daemon.sock", "daemon.token", "keymem.lbug"} <= present, present
    assert stat.S_ISSOCK((d / "daemon.sock").lstat().st_mode)
    assert _loose(d) == []


def test_daemon_refuses_a_wrong_token(daemon: Any) -> None:
    from keymem.server.protocol import LineReader, encode

    d = daemon.data_dir
    for token in ("0" * 64, "", None, (d / "daemon.token").read_text().strip()[:-1] + "x"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(str(d / "daemon.sock"))
            s.sendall(encode({"id": 1, "token": token, "method": "remember",
                              "params": {"content": "intrusion", "keys": ["x"]}}))
            reader = LineReader(s)
            resp = reader.read()
            assert resp is not None and resp["ok"] is False and resp["error"]["type"] == "Unauthorized"
            assert reader.read() is None  # and the daemon closed the connection
    # nothing was written, and the right token still works
    from keymem.server.client import DaemonClient

    c = DaemonClient(daemon.settings(), start=False)
    try:
        assert c.call("counts")["memories"] == 0
    finally:
        c.close()


# -- transcripts -----------------------------------------------------------------------------------
@pytest.fixture
def transcripts(tmp_path: Path) -> tuple[dict[str, str], list[Path]]:
    home = tmp_path / "home"
    t = home / ".claude" / "projects" / "-work-x" / "sess-1.jsonl"
    t.parent.mkdir(parents=True)
    t.write_text('{"type":"user","text":"SECRET PROMPT"}\n{"type":"assistant"}\n')
    return {"HOME": str(home)}, [t]


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    from keymem.server import provenance

    seen: list[Path] = []
    real = provenance._LineCounter.count

    def spy(self: Any, path: Path) -> int | None:
        seen.append(path)
        return real(self, path)

    monkeypatch.setattr(provenance._LineCounter, "count", spy)
    provenance._found.clear()
    return seen


def test_transcripts_read_only_under_the_seed_conditions(transcripts: Any, opened: list[Path]) -> None:
    from keymem.server.provenance import resolve_source

    env, (path,) = transcripts
    # no host session variable, access unset: nothing is opened, no source
    assert resolve_source(None, env) is None and opened == []
    # access forbidden: the session is recorded, the transcript is not opened
    src = resolve_source(False, {**env, "CLAUDE_CODE_SESSION_ID": "sess-1"})
    assert src == {"host_session": "sess-1", "host_agent": "claude-code", "host_turn": None} and opened == []
    # a recognised host injected its session: only a line count is taken
    src = resolve_source(None, {**env, "CLAUDE_CODE_SESSION_ID": "sess-1"})
    assert src == {"host_session": "sess-1", "host_agent": "claude-code", "host_turn": 2} and opened == [path]
    assert "SECRET" not in json.dumps(src)
    # explicit opt-in without a session variable: the newest fresh transcript
    src = resolve_source(True, env)
    assert src is not None and src["host_session"] == "sess-1"
    # a session id that tries to walk out of the transcript root is ignored
    opened.clear()
    src = resolve_source(None, {**env, "CLAUDE_CODE_SESSION_ID": "../../../etc/passwd"})
    assert src is not None and src["host_turn"] is None and opened == []


def test_forget_by_id_ignores_namespace_through_mcp_contract(graph: Any) -> None:
    """Documented behaviour: ids are global and unguessable (80 random bits); forget(memory_id) without a
    namespace deletes whatever memory the id names (the MCP tool takes no namespace)."""
    _, ids = _world(graph)
    assert graph.forget(memory_id=ids["secret"]).deleted
    with pytest.raises(KeymemError):
        graph.read_memory(memory_id=ids["secret"])
    assert len(ids["secret"]) == 22 and int(ids["secret"][2:], 16) >= 0
    assert check_invariants(graph) == []
