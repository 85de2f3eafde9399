"""A session does not pay twice: through the real MCP client over stdio (and over HTTP), a real daemon,
Kuzu and MiniLM, a later recall or read_key holds back the memories the session already got."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from keymem.server.render import render
from tests.domain.test_seen import PET_FACTS
from tests.e2e.support import Keymem
from tests.e2e.test_stdio_tools import Session, params

pytestmark = pytest.mark.timeout(120)

FACTS = [
    *PET_FACTS,
    "The user's tortoise Dot eats dandelions from the garden",
    "The user bought a new scratching post for Miso in June",
    "The user's rabbit Clover hops around the living room at night",
    "The user trains Biscuit to fetch the newspaper",
]
HELD_BACK = "you already have omitted (include_seen=true repeats)"


def ids(result: dict[str, Any]) -> list[str]:
    return [m["memory_id"] for m in result["memories"]]


def test_a_stdio_session_gets_each_memory_once_unless_it_asks_again(km: Keymem) -> None:
    async def main() -> None:
        async with Client(params(km.env), mode="legacy") as c:
            s = Session(c)
            stored = await s.ok("remember_batch", {"items": [{"content": f, "keys": ["pets", "animals"]}
                                                             for f in FACTS]})
            every = {r["memory_id"] for r in stored["results"]}
            garden = (await s.ok("remember", {"content": "The user grows tomatoes on the balcony",
                                              "keys": ["garden", "tomatoes"]}))["memory_id"]

            first = await s.ok("recall", {"query": "user pets", "budget": 120})
            got = ids(first)
            assert got and set(got) <= every and first["omitted"] == 0

            # the same question again: the next memories, not the first ones, and one line saying so
            second = await s.ok("recall", {"query": "user pets", "budget": 120})
            assert second["memories"] and not set(ids(second)) & set(got)
            assert second["omitted"] == len(got)
            text = render("recall", second)  # the text the model read (Session.ok checks it is this)
            assert HELD_BACK in text and not any(m in text for m in got)

            # asked for them: repeated, and nothing is said to be held back
            again = await s.ok("recall", {"query": "user pets", "budget": 120, "include_seen": True})
            assert ids(again) == got and again["omitted"] == 0

            # read_key after recall: what recall delivered is skipped, the page filled with the rest
            delivered = set(got) | set(ids(second))
            page = await s.ok("read_key", {"key_id": "pets", "limit": 3})
            assert page["memories"] and not set(ids(page)) & delivered
            assert page["omitted"] >= 1 and page["total"] == len(FACTS)
            whole = await s.ok("read_key", {"key_id": "pets", "limit": 20, "include_seen": True})
            assert set(ids(whole)) == every

            # read_memory delivers too
            await s.ok("read_memory", {"memory_id": garden})
            tomatoes = await s.ok("read_key", {"key_id": "garden"})
            assert tomatoes["memories"] == [] and tomatoes["omitted"] == 1

            # a bad seen: one line naming the argument, the session goes on
            for args, words in [({"seen": "m_0123456789"}, "recall: argument 'seen' must be a list"),
                                ({"seen": ["k_0123456789abcdef"]}, "recall: seen 'k_0123456789abcdef' is not a "
                                                                    "keymem id (expected m_")]:
                err = await s.err("recall", {"query": "user pets", **args})
                assert err.startswith(words) and "\n" not in err, err
            assert (await s.ok("recall", {"query": "tomatoes", "include_seen": True}))["memories"]

        # a new session starts with nothing held back
        async with Client(params(km.env), mode="legacy") as c:
            fresh = await Session(c).ok("recall", {"query": "user pets", "budget": 120})
            assert ids(fresh) == got and fresh["omitted"] == 0

    asyncio.run(main())
