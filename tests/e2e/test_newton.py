"""The README's promise end to end: "Newton" -> apple -> strawberry -> "the user is allergic to strawberries".

Through the real stdio server (real daemon, real store, real MiniLM) and the real `keymem hook`
process: the allergy shares no word with the question and is linked to Newton only through shared
keys, yet it is in the first `recall` result and in the hook's injection, with the path that led to
it, in few tokens.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client

from tests.e2e.support import Keymem
from tests.e2e.test_stdio_tools import params
from tests.server.test_hook import prompt, run_hook

pytestmark = pytest.mark.timeout(120)

MEMORIES = [
    {"content": "The user's cat is named Newton, after Isaac Newton and his apple.",
     "keys": ["Newton", "cat", "apple"], "key_types": ["name", "concept", "concept"]},
    {"content": "Apples and strawberries are both fruit of the rose family.",
     "keys": ["apple", "strawberry", "fruit"]},
    {"content": "The user is allergic to strawberries.", "keys": ["strawberry", "allergy"]},
    {"content": "The user's sister lives in Porto and works as an architect.",
     "keys": ["sister", "Porto", "architecture"], "key_types": ["concept", "proper_noun", "concept"]},
    {"content": "The user runs every Tuesday and Thursday morning.", "keys": ["running", "exercise"]},
]
QUESTION = "What should I know before baking a Newton-themed dessert?"
ALLERGY = "The user is allergic to strawberries."


def test_the_allergy_reaches_the_agent_in_the_first_recall_and_in_the_hook(km: Keymem) -> None:
    async def session() -> tuple[str, dict[str, object], str]:
        async with Client(params(km.env)) as c:
            stored = await c.call_tool("remember_batch", {"items": MEMORIES})
            assert not stored.is_error, stored.content
            r = await c.call_tool("recall", {"query": QUESTION})
            assert not r.is_error
            unrelated = await c.call_tool("recall", {"query": "What is 17 times 23?"})
            return r.content[0].text, r.structured_content, unrelated.content[0].text  # type: ignore[union-attr,return-value]

    text, structured, unrelated = asyncio.run(session())
    assert ALLERGY in text and "via apple -> strawberry" in text, text
    assert not text.lstrip().startswith("{") and len(text) < 2000, text  # compact lines, not JSON
    hit = next(m for m in structured["memories"] if m["content"] == ALLERGY)  # type: ignore[index,union-attr]
    assert hit["hops"] == 2 and hit["via"] == ["apple", "strawberry"]
    assert "with confidence" in unrelated and ALLERGY not in unrelated  # nothing presented as the answer

    proc, _ = run_hook(km.env, prompt(QUESTION))
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ALLERGY in context and "via apple -> strawberry" in context, context
    quiet, _ = run_hook(km.env, prompt("What is 17 times 23?"))
    assert quiet.returncode == 0 and quiet.stdout == ""
