"""Every tool through the real MCP client over stdio, a real daemon, real Kuzu and real MiniLM."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.e2e.support import SERVER_CMD, Keymem

pytestmark = pytest.mark.timeout(120)


def params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=SERVER_CMD[0], args=SERVER_CMD[1:], env=env)


from keymem.server.render import render  # noqa: E402


class Session:
    """A thin wrapper: ``ok`` asserts success and returns structuredContent, ``err`` returns the error text."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, args: dict[str, Any]) -> Any:
        r = await self.client.call_tool(tool, args)
        text = r.content[0].text  # type: ignore[union-attr]
        assert not r.is_error, f"{tool} failed: {text}"
        assert r.structured_content is not None
        assert text == render(tool, r.structured_content), "the text is the compact rendering of structuredContent"
        assert not text.lstrip().startswith("{"), "the model reads lines, not JSON"
        return r.structured_content

    async def err(self, tool: str, args: dict[str, Any]) -> str:
        r = await self.client.call_tool(tool, args)
        assert r.is_error, f"{tool}({args}) should have failed: {r.structured_content}"
        return r.content[0].text  # type: ignore[union-attr]


def test_every_tool_happy_and_error_paths(km: Keymem, tmp_path: Path) -> None:
    home = tmp_path / "home"
    transcript = home / ".claude" / "projects" / "-work-demo" / "sess-42.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"type":"user"}\n{"type":"assistant"}\n{"type":"user"}\n')
    env = {**km.env, "HOME": str(home), "CLAUDE_CODE_SESSION_ID": "sess-42"}

    async def main() -> None:
        async with Client(params(env), mode="legacy") as c:
            s = Session(c)
            names = sorted(t.name for t in (await c.list_tools()).tools)
            assert names == sorted(["recall", "browse_keys", "read_key", "read_memory", "confirm_memory",
                                    "remember", "correct", "dismiss", "forget", "remember_batch"])

            # remember / duplicate / errors
            r = await s.ok("remember", {"content": "The user likes strawberries", "keys": ["strawberry", "fruit", "food preference"]})
            mid = r["memory_id"]
            assert mid.startswith("m_") and not r["duplicate"] and len(r["keys"]) == 3
            dup = await s.ok("remember", {"content": "the user likes strawberries", "keys": ["fruit"]})
            assert dup["duplicate"] and dup["memory_id"] == mid
            named = await s.ok("remember", {"content": "Alice is the user's sister", "keys": ["Alice", "family"],
                                            "key_types": ["name", "concept"]})
            assert {k["key_type"] for k in named["keys"]} == {"name", "concept"}
            assert "keys" in await s.err("remember", {"content": "no keys here", "keys": []})
            assert "content must not be empty" in await s.err("remember", {"content": "   ", "keys": ["x"]})
            assert "key_types" in await s.err("remember", {"content": "x y", "keys": ["a", "b"], "key_types": ["name"]})

            # provenance from the host's session variable and transcript
            mem = await s.ok("read_memory", {"memory_id": mid})
            assert mem["source"] == {"host_session": "sess-42", "host_agent": "claude-code", "host_turn": 3}

            # remember_batch
            batch = await s.ok("remember_batch", {"items": [
                {"content": "The user's dog is called Biscuit", "keys": ["dog", "Biscuit", "pet"], "key_types": ["concept", "name", "concept"]},
                {"content": "The user plans a trip to Kyoto in May", "keys": ["travel", "Kyoto"], "decay_profile": "transient"},
            ]})
            assert [x["duplicate"] for x in batch["results"]] == [False, False]
            assert "items" in await s.err("remember_batch", {"items": []})
            assert "related_to" in await s.err("remember_batch", {"items": [
                {"content": "ok fact", "keys": ["ok"]}, {"content": "bad fact", "keys": ["k"], "related_to": ["m_00000000"]}]})
            assert "'items[1].content'" in await s.err("remember_batch", {"items": [{"content": "a b", "keys": ["a"]}, {"content": ""}]})
            again = await s.ok("remember", {"content": "ok fact", "keys": ["ok"]})  # the refused batch wrote nothing
            assert not again["duplicate"]
            await s.ok("forget", {"memory_id": again["memory_id"]})

            # recall
            # read_memory above delivered mid in this session: asked for again (include_seen), it comes back
            rec = await s.ok("recall", {"query": "fruit", "explain": True, "include_seen": True})
            assert rec["keys"] and rec["memory"]["memory_id"] == mid and "namespaces" in rec
            assert "query" in await s.err("recall", {"query": ""})
            assert "top_k" in await s.err("recall", {"query": "x", "top_k": 500})

            # browse_keys
            br = await s.ok("browse_keys", {})
            assert br["total"] >= 6 and br["keys"]
            assert "limit" in await s.err("browse_keys", {"limit": 0})
            assert "namespace" in await s.err("browse_keys", {"namespace": "bad namespace!"})

            # read_key
            fruit = next(k for k in r["keys"] if k["key"] == "fruit")
            rk = await s.ok("read_key", {"key_id": fruit["key_id"], "query": "strawberries", "include_seen": True})
            assert rk["memories"][0]["memory_id"] == mid and rk["total"] == 1
            assert "does not exist" in await s.err("read_key", {"key_id": "k_deadbeef"})

            # read_memory
            full = await s.ok("read_memory", {"memory_id": mid, "via_key_id": fruit["key_id"]})
            assert full["content"] == "The user likes strawberries" and full["access_count"] >= 1
            assert "not a keymem id" in await s.err("read_memory", {"memory_id": "nope"})
            assert "does not exist" in await s.err("read_memory", {"memory_id": "m_00000000"})

            # confirm_memory
            conf = await s.ok("confirm_memory", {"memory_id": mid, "evidence": "the user said so today", "source": "user"})
            assert conf["validity"]["confirmation_count"] >= 1
            assert "evidence" in await s.err("confirm_memory", {"memory_id": mid, "evidence": ""})

            # correct
            cor = await s.ok("correct", {"memory_id": mid, "content": "The user likes raspberries now"})
            assert cor["supersedes"] == mid and cor["memory_id"] != mid
            old = await s.ok("read_memory", {"memory_id": mid})
            assert old["superseded_by"] == cor["memory_id"] and not old["active"]
            assert old["validity"]["status"] == "superseded" and old["validity"]["verification_required"]
            assert "same as the current version" in await s.err(
                "correct", {"memory_id": cor["memory_id"], "content": "The user likes raspberries now"})

            # dismiss
            new_keys = (await s.ok("read_memory", {"memory_id": cor["memory_id"]}))["keys"]
            dis = await s.ok("dismiss", {"memory_id": cor["memory_id"], "key_id": new_keys[0]["key_id"]})
            assert dis["link_weight"] < new_keys[0]["link_weight"]
            assert "not linked" in await s.err("dismiss", {"memory_id": cor["memory_id"], "key_id": "k_deadbeef"})

            # forget
            gone = await s.ok("forget", {"memory_id": named["memory_id"]})
            assert gone == {"memory_id": named["memory_id"], "deleted": True}
            assert "does not exist" in await s.err("read_memory", {"memory_id": named["memory_id"]})
            assert "does not exist" in await s.err("forget", {"memory_id": named["memory_id"]})

            # the prompt
            prompt = await c.get_prompt("memory_system_prompt")
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert "recall" in text and "remember" in text and "three times" in text

        # a new session sees live counts in its instructions
        async with Client(params(env), mode="legacy") as c2:
            assert c2.instructions is not None
            assert "keys" in c2.instructions and " 3 memories" in c2.instructions, c2.instructions

    asyncio.run(main())


def test_hook_installed_wording_and_modern_discover(km: Keymem) -> None:
    env = {**km.env, "KEYMEM_HOOK_INSTALLED": "true"}

    async def main() -> None:
        async with Client(params(env)) as c:  # mode auto: server/discover, then the 2026 era
            assert c.instructions and "prompt hook pushes" in c.instructions
            prompt = await c.get_prompt("memory_system_prompt")
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert "prompt hook pushes" in text and "three times" not in text

    asyncio.run(main())


def test_daemon_off_runs_in_process(km: Keymem) -> None:
    env = {**km.env, "KEYMEM_DAEMON": "off"}

    async def main() -> None:
        async with Client(params(env), mode="legacy") as c:
            s = Session(c)
            r = await s.ok("remember", {"content": "Stdio-only mode works", "keys": ["mode", "stdio"]})
            rec = await s.ok("recall", {"query": "stdio"})
            assert rec["memory"]["memory_id"] == r["memory_id"]
        assert not (km.data_dir / "daemon.sock").exists()

    asyncio.run(main())


def test_bad_arguments_get_one_actionable_line_and_the_version_is_served(km: Keymem) -> None:
    """Over a real stdio session: serverInfo.version, and argument errors as one line each."""
    from importlib.metadata import version

    env = {**km.env, "KEYMEM_DAEMON": "off"}  # refused before any backend: no daemon needed

    async def main() -> None:
        async with Client(params(env), mode="legacy") as c:
            assert c.server_info is not None and c.server_info.version == version("keymem")
            s = Session(c)
            cases = [
                ("recall", {"query": ""},  # empty string
                 "recall: argument 'query' must be a string of 1 to 4000 characters (got an empty string)"),
                ("read_key", {"key_id": ["k_1"]},  # wrong type
                 "read_key: argument 'key_id' must be a string (got a list of 1 item)"),
                ("browse_keys", {"limit": 0},  # out of range
                 "browse_keys: argument 'limit' must be an integer from 1 to 500 (got 0)"),
                ("confirm_memory", {"memory_id": "m_0123456789"},  # missing required argument
                 "confirm_memory: missing required argument 'evidence' (a string of 1 to 4000 characters)"),
                ("read_memory", {"memory_id": "m_0123456789", "via_key": "k_1"},  # unknown argument
                 "read_memory: unknown argument 'via_key' (did you mean 'via_key_id'?); the arguments are "
                 "memory_id, via_key_id, namespace"),
            ]
            for tool, args, expected in cases:
                assert await s.err(tool, args) == expected

    asyncio.run(main())
