"""A configured part that is not installed is said once, in the session's first tool result."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client

from tests.e2e.support import Keymem
from tests.e2e.test_stdio_tools import params

pytestmark = pytest.mark.timeout(120)


def test_a_missing_reranker_is_said_in_the_first_tool_result_only(km: Keymem) -> None:
    env = {**km.env, "KEYMEM_RERANK": "true", "KEYMEM_RERANK_MODEL_PATH": str(km.data_dir / "no-reranker")}

    async def session() -> tuple[str, str]:
        async with Client(params(env)) as c:
            first = await c.call_tool("remember", {"content": "The user's cat is named Pistachio", "keys": ["cat"]})
            second = await c.call_tool("recall", {"query": "cat"})
            assert not first.is_error and not second.is_error
            return first.content[0].text, second.content[0].text  # type: ignore[union-attr]

    first, second = asyncio.run(session())
    assert first.startswith("note: the reranker is on (KEYMEM_RERANK)") and "KEYMEM_RERANK=false" in first
    assert "stored m_" in first
    assert "note:" not in second and "Pistachio" in second
