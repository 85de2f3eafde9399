"""Association in a store shaped like a real one, through the real stdio server and the real hook.

A chain key written two ways ("Terraform" / "Terraform Cloud"), and busy with memories that only
mention it in passing, still carries the question to the fact it needs; a general question that
uses a stored name in another sense ("celery" the vegetable, "Celery" the task queue) gets
nothing, while a question about the user's own Celery workers gets them.
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

TARGET = ("Production changes in Terraform Cloud need an approved run from the workspace; applying from a "
          "workstation is banned.")
CELERY = "The Celery workers of the user's Tern app share the company RabbitMQ broker."
CITIES = ["Leeds", "Bristol", "Glasgow", "Cardiff", "Belfast", "Norwich", "Exeter", "Dundee"]
MEMORIES = [
    {"content": "Pellam, the user's reporting service, has all its cloud resources managed as code with Terraform.",
     "keys": ["Pellam", "Terraform", "infrastructure as code"], "key_types": ["proper_noun", "proper_noun", "concept"]},
    {"content": TARGET, "keys": ["Terraform Cloud", "production approvals", "local apply ban"],
     "key_types": ["proper_noun", "concept", "concept"]},
    *({"content": f"User watched a Terraform talk at a meetup in {city}.", "keys": ["Terraform", "meetup", city],
       "key_types": ["proper_noun", "concept", "proper_noun"]} for city in CITIES),
    {"content": CELERY, "keys": ["Celery", "Tern app", "RabbitMQ"], "key_types": ["proper_noun"] * 3},
]
QUESTION = "I need one extra S3 bucket for Pellam's reports. Can I just push it out from my laptop this afternoon?"
GENERAL = "How many calories are in a stick of celery?"


def test_a_key_written_two_ways_and_busy_still_carries_the_chain(km: Keymem) -> None:
    async def session() -> tuple[str, str, dict[str, object]]:
        async with Client(params(km.env)) as c:
            stored = await c.call_tool("remember_batch", {"items": MEMORIES})
            assert not stored.is_error, stored.content
            r = await c.call_tool("recall", {"query": QUESTION})
            general = await c.call_tool("recall", {"query": GENERAL})
            return r.content[0].text, general.content[0].text, general.structured_content  # type: ignore[union-attr,return-value]

    text, general, structured = asyncio.run(session())
    assert TARGET in text and "Terraform Cloud" in text, text
    assert sum(city in text for city in CITIES) <= 1, text  # the busy key's passing mentions stay out
    assert CELERY not in general and "with confidence" in general, general
    assert structured["confident"] is False and not structured["memories"]

    proc, _ = run_hook(km.env, prompt(QUESTION))
    assert proc.returncode == 0, proc.stderr
    assert TARGET in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    quiet, _ = run_hook(km.env, prompt(GENERAL))  # a stored word in another sense: nothing injected
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout
    mine, _ = run_hook(km.env, prompt("Are the Celery workers of my Tern app healthy after the broker upgrade?"))
    assert mine.returncode == 0 and CELERY in json.loads(mine.stdout)["hookSpecificOutput"]["additionalContext"]
