"""The recall tool's memories, preview and key order, on a real store with the real MiniLM model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from keymem.memory.graph import MemoryGraph
from tests.domain.test_navigate_recall import link_weights, memory_state

QUERY = "Who painted the sunrise over the lake?"


def _sorted_by_score(keys: list[dict]) -> bool:
    scores = [k["score"] for k in keys]
    return scores == sorted(scores, reverse=True)


def test_preview_comes_from_any_returned_key(graph: MemoryGraph) -> None:
    """Two keys match literally; the more specific one ("lake", one memory) is not where the best
    memory is. The preview is the memory the query matches best, shown under the key that holds it."""
    res = graph.remember_batch([
        {"content": "Melanie painted a sunrise over the lake", "keys": ["sunrise", "painting"]},
        {"content": "We had a picnic by the lake", "keys": ["lake", "picnic"]},
        {"content": "Sunrise yoga starts at six", "keys": ["sunrise", "yoga"]},
        {"content": "The sunrise was orange today", "keys": ["sunrise", "weather"]},
    ]).results
    painted = res[0].memory_id
    before = (link_weights(graph), memory_state(graph))
    r = graph.recall(query=QUERY).dump()
    literal = [k for k in r["keys"] if k["score_kind"] == "literal_match"]
    assert {k["key"] for k in literal} == {"sunrise", "lake"}
    lake = next(k for k in literal if k["key"] == "lake")
    sunrise = next(k for k in literal if k["key"] == "sunrise")
    assert lake["specificity"] > sunrise["specificity"]  # by score and specificity alone, "lake" was the strongest
    mem = r["memory"]
    assert mem["memory_id"] == painted and mem["matched_key"]["key"] == "sunrise"
    assert r["memories"][0]["memory_id"] == painted  # the preview is the first delivered memory
    assert {k["key"] for k in mem["connected_keys"]} == {"painting"}
    assert mem["validity"]["status"] == "fresh"
    assert _sorted_by_score(r["keys"])
    assert (link_weights(graph), memory_state(graph)) == before  # still passive


def test_keys_come_by_score_then_specificity(graph: MemoryGraph) -> None:
    """"sunrise" and "lake" both match literally; "sunrise" (one memory) is the more specific and
    comes first; the preview is the best match, under the first returned key that links it."""
    res = graph.remember_batch([
        {"content": "Melanie painted a sunrise over the lake", "keys": ["sunrise", "lake"]},
        {"content": "The lake froze early this winter", "keys": ["lake", "winter"]},
        {"content": "Ice skating on the frozen pond", "keys": ["winter", "skating"]},
    ]).results
    r = graph.recall(query=QUERY)
    assert r.memory is not None and r.memory.memory_id == res[0].memory_id
    top = [k for k in r.keys if k.score == 1.0]
    assert [k.key for k in top] == ["sunrise", "lake"]
    assert top[0].specificity > top[1].specificity
    assert r.memory.matched_key.key == "sunrise"


def test_read_key_prefers_the_person_the_query_names(graph: MemoryGraph) -> None:
    """Inside one key, a memory of the person the query names ranks above a better lexical match
    about someone else (the name bonus)."""
    for topic in ("hiking", "cooking", "music", "books"):  # Melanie says a lot: her name is a common word
        graph.remember(content=f"Melanie: I love {topic}", keys=["Melanie", topic], key_types=["name", "concept"])
    mel = graph.remember(content="Melanie: we fixed the fence", keys=["Melanie", "fence"],
                         key_types=["name", "concept"]).memory_id
    car = graph.remember(content="Caroline: what colour should we paint the fence? paint it blue",
                         keys=["Caroline", "fence"], key_types=["name", "concept"]).memory_id
    kid = next(k.key_id for k in graph.read_memory(memory_id=mel).keys if k.key == "fence")
    lexical = graph.lexical.score_docs("What colour did Melanie paint the fence?", [mel, car])
    assert lexical[car] > lexical[mel]
    ranked = graph.read_key(key_id=kid, query="What colour did Melanie paint the fence?").memories
    assert [m.memory_id for m in ranked] == [mel, car] and ranked[0].score_kind == "content_relevance"
    plain = graph.read_key(key_id=kid, query="What colour is the painted fence?").memories
    assert [m.memory_id for m in plain] == [car, mel]


def test_the_budget_bounds_what_recall_delivers(graph: MemoryGraph) -> None:
    """A key of hundreds of memories named literally: recall delivers the best few within its token budget."""
    from keymem.memory.deliver import CHARS_PER_TOKEN, ID_TOKENS

    graph.remember_batch([{"content": f"Wrote module {i} of the billing service in Rust, with tests and docs "
                           "and a changelog entry", "keys": ["programming"]} for i in range(205)])
    r = graph.recall(query="programming billing module")
    assert r.keys[0].key == "programming" and r.keys[0].memory_count == 205 and r.confident
    cost = sum(ID_TOKENS + len(m.content) / CHARS_PER_TOKEN for m in r.memories)
    assert 1 <= len(r.memories) <= 7 and cost <= 500
    small = graph.recall(query="programming billing module", budget=60)
    assert len(small.memories) == 1  # the first always fits; nothing more within 60 tokens


def test_read_key_orders_equal_memories_by_id(graph: MemoryGraph) -> None:
    """Equal score and age (the test clock stands still): by id, whatever order the store returned them in.
    A key this small is ranked by words alone (meaning counts from ``MEANING_MIN_MEMBERS`` up)."""
    from keymem.memory.navigate import MEANING_MIN_MEMBERS

    ids = [graph.remember(content=f"note {i} about the weekly review", keys=["review"]).memory_id
           for i in range(MEANING_MIN_MEMBERS)]
    kid = next(k.key_id for k in graph.read_memory(memory_id=ids[0]).keys)
    assert [m.memory_id for m in graph.read_key(key_id=kid).memories] == sorted(ids)
    assert [m.memory_id for m in graph.read_key(key_id=kid, query="weekly review").memories] == sorted(ids)


def test_read_key_ranks_a_busy_keys_memories_by_meaning(graph: MemoryGraph) -> None:
    """Through a key with many memories, the one a question is about comes first even when it shares
    no word with the question (it was reached by association, not by its words)."""
    chores = ["Idris Karimi likes his coffee black with no sugar.", "Idris Karimi cycles to the office on Tuesdays.",
              "Idris Karimi keeps a fern on his desk by the window.", "Idris Karimi supports the local football club.",
              "Idris Karimi's laptop has a sticker of a lighthouse.", "Idris Karimi once lived in Lisbon for a year.",
              "Idris Karimi plays chess at lunchtime with the interns."]
    for text in chores:
        graph.remember(content=text, keys=["Idris Karimi"])
    target = graph.remember(content="Idris Karimi is on sabbatical until January; his deputy handles his approvals.",
                            keys=["Idris Karimi"]).memory_id
    kid = next(k.key_id for k in graph.read_memory(memory_id=target).keys)
    page = graph.read_key(key_id=kid, query="Who signs off the budget while he is away on leave?", limit=3)
    assert page.memories[0].memory_id == target


def test_recall_lists_the_key_association_leads_on_through(graph: MemoryGraph) -> None:
    """What the walk reached but the budget left out: recall's key list names the key it came
    through (score kind ``association``), after the best routed keys, so an agent reads on there."""
    from keymem.memory.deliver import ROUTED_FIRST

    graph.remember(content="Stonechat's exit plan needs sign-off from Idris Karimi.", keys=["Stonechat", "Idris Karimi"])
    far = graph.remember(content="Idris Karimi is on sabbatical until January: " + "a long handover note, " * 40,
                         keys=["Idris Karimi", "sabbatical"])
    r = graph.recall(query="What does the Stonechat plan still need?", budget=150)  # room for keys, not for it
    assert far.memory_id not in [m.memory_id for m in r.memories]
    kinds = {k.key: k.score_kind for k in r.keys}
    assert kinds.get("Idris Karimi") == "association", kinds
    routed = [k.key for k in r.keys if k.score_kind != "association"]
    assert [k.key for k in r.keys].index("Idris Karimi") == min(len(routed), ROUTED_FIRST)


def test_the_hook_gives_empty_direct_slots_to_associations(graph: MemoryGraph) -> None:
    """One direct hit and a chain behind it: the hook's slots left by direct hits carry the chain on,
    up to KEYMEM_INJECT_MAX memories in all."""
    head = graph.remember(content="Greta Lindqvist's shop backend stores its orders in MySQL 8.",
                          keys=["Greta Lindqvist", "MySQL 8"])
    first = graph.remember(content="MySQL 8 at the company is one primary with a single reporting replica.",
                           keys=["MySQL 8", "reporting replica"])
    second = graph.remember(content="The reporting replica is queried by finance at each month's end.",
                            keys=["reporting replica", "finance close"])
    third = graph.remember(content="The finance close runs over the final two working days of a month.",
                           keys=["finance close"])
    chosen = graph.recall_inject(prompt="Greta Lindqvist wants her backend offline for a day next week: anything to watch?").memory_ids
    assert chosen[0] == head.memory_id and len(chosen) == graph.settings.inject_max
    assert chosen[1:] == [first.memory_id, second.memory_id, third.memory_id]


def test_a_named_entitys_memory_seeds_the_walk_however_its_words_ranked(graph: MemoryGraph) -> None:
    """The question names an entity (here by its acronym) whose memory shares none of its other words,
    while memories that share them crowd the direct ranking: the walk still starts at the entity."""
    for i in range(8):
        graph.remember(content=f"Moving money from savings before April {i} is what Jo asked about.",
                       keys=[f"chat {i}", "savings"])
    graph.remember(content="User's self-invested personal pension is held with Corriebank Invest.",
                   keys=["self-invested personal pension", "Corriebank Invest"])
    cap = graph.remember(content="Corriebank Invest caps one-off payments at 15,000 per tax year.",
                         keys=["Corriebank Invest", "payment cap"]).memory_id
    r = graph.recall(query="Should I move 20k from savings into my SIPP before April?")
    assert cap in [m.memory_id for m in r.memories]


def test_the_hook_keeps_quiet_about_a_stored_word_used_in_passing(graph: MemoryGraph) -> None:
    """A prompt about the world that only uses a stored word gets nothing: a name of one capitalised
    word written in lower case where the writer capitalises ("hollyhock seeds"), or a key's word in
    a prompt that names nothing stored and says nothing of the user. The user's own things still
    get their facts, by name or by "my"."""
    server = graph.remember(content="Hollyhock is the team's build server; it still runs glibc 2.28.",
                            keys=["Hollyhock", "build server", "glibc"],
                            key_types=["proper_noun", "concept", "concept"]).memory_id
    snow = graph.remember(content="The user's winter tyres and snow chains are in the garage loft.",
                          keys=["snow", "winter", "garage"]).memory_id
    for prompt in ("When should I sow hollyhock seeds?", "Write a haiku about falling snow.",
                   "Tell me a poem about snow in winter."):
        assert graph.recall_inject(prompt=prompt).memory_ids == [], prompt
    assert server in graph.recall_inject(prompt="When should I patch Hollyhock?").memory_ids
    assert server in graph.recall_inject(prompt="i'd like hollyhock to build the release tonight").memory_ids
    assert snow in graph.recall_inject(prompt="Where are my snow chains?").memory_ids


def test_a_named_entitys_memory_about_something_else_is_not_delivered(graph: MemoryGraph) -> None:
    """The question names Merganser VPN and asks when its certificate expires: the memory that says
    so is delivered; the one about its office move, linked to the same name, is not (neither as a
    direct hit nor through the shared key)."""
    target = graph.remember(content="The Merganser VPN certificate expires on 30 September and must be renewed "
                                    "a week before.", keys=["Merganser VPN", "certificate renewal"],
                            key_types=["proper_noun", "concept"]).memory_id
    decoy = graph.remember(content="Merganser VPN's support desk moved to the second floor of the Leeds office.",
                           keys=["Merganser VPN", "office move"], key_types=["proper_noun", "concept"]).memory_id
    r = graph.recall(query="When does the Merganser VPN certificate expire?")
    delivered = [m.memory_id for m in r.memories]
    assert delivered[0] == target and decoy not in delivered
    assert decoy in [m.memory_id for m in graph.recall(query="Where is the Merganser VPN support desk now?").memories]


def _wordpiece(minilm_dir: Path) -> Callable[[str], int]:
    """MiniLM WordPiece tokens of a text, as the benchmarks count an agent's reading (no special tokens)."""
    from tokenizers import Tokenizer

    wp = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    wp.no_truncation()
    wp.no_padding()
    return lambda text: len(wp.encode(text, add_special_tokens=False).ids)


INVOICE_TOPICS = ["exports", "archive", "reminders", "PDFs", "numbering", "currency", "approvals", "disputes",
                  "templates", "taxes", "discounts", "refunds", "late fees", "payment terms", "audits",
                  "retention", "emails", "batches", "drafts", "credit notes"]


def test_recall_keeps_its_token_budget_on_the_whole_text(graph: MemoryGraph, minilm_dir: Path) -> None:
    """The key line counts too: twenty invoice keys and their long memories, asked for every key,
    still read within the budget; the best key and the best memory stay, and a smaller budget
    takes more away."""
    from keymem.memory.budget import text_cost
    from keymem.server.render import render
    from keymem.text.cost import estimate_tokens

    ntok = _wordpiece(minilm_dir)
    graph.remember_batch([{"content": f"Invoice {topic}: the billing service handles {topic} for every "
                                      f"customer account nightly, with a report to finance and an audit trail "
                                      f"kept for seven years ({i}).",
                           "keys": [f"invoice {topic}", "billing service"]} for i, topic in enumerate(INVOICE_TOPICS)])
    full = graph.recall(query="invoice billing service", top_k=20, budget=4000)
    assert ntok(render("recall", full.dump())) > 700  # what the budget has to cut
    for budget in (500, 200):
        r = graph.recall(query="invoice billing service", top_k=20, budget=budget)
        text = render("recall", r.dump())
        assert ntok(text) <= text_cost(r) == estimate_tokens(text) <= budget, (budget, ntok(text), text_cost(r))
        assert r.keys[0].key_id == full.keys[0].key_id and r.memories[0].memory_id == full.memories[0].memory_id
        assert r.memory is not None and r.memory.memory_id == r.memories[0].memory_id
        assert len(r.keys) < len(full.keys) and len(r.memories) < len(full.memories)
    assert len(graph.recall(query="invoice billing service", top_k=20, budget=200).memories) <= len(r.memories)


def test_the_budget_takes_aliases_then_keys_then_memories_away(graph: MemoryGraph) -> None:
    """What matters least goes first: aliases, then keys past the second, then the weaker memories;
    the first memory is cut short (its id kept) only when nothing else is left."""
    from keymem.memory.budget import KEYS_BEFORE_MEMORIES, fit_budget, text_cost
    from keymem.memory.views import KeyView, RecalledMemory, RecallResult, Validity

    fresh = Validity(freshness=1.0, status="fresh", age_days=0.0, last_confirmed_at="2026-01-01T00:00:00Z",
                     confirmation_count=0, decay_profile="standard", verification_recommended=False,
                     verification_required=False)

    def result() -> RecallResult:
        keys = [KeyView(key_id=f"k_{i:020x}", key=f"invoice topic {i}", key_type="concept",
                        aliases=[f"bill {i}", f"invoices {i}"], memory_count=3, is_hub=False, specificity=1.0)
                for i in range(6)]
        memories = [RecalledMemory(memory_id=f"m_{i:020x}", content=f"Invoice fact number {i}: " + "word " * 30,
                                   hops=0 if i < 3 else 1, via=[] if i < 3 else ["invoice topic 1"], validity=fresh)
                    for i in range(6)]
        return RecallResult(keys=keys, memory=None, memories=memories)

    whole = text_cost(result())
    r = fit_budget(result(), whole - 5)
    assert len(r.keys) == 6 and not r.keys[-1].aliases and r.keys[0].aliases and len(r.memories) == 6
    plain = result()
    for k in plain.keys:
        k.aliases = []
    r = fit_budget(result(), text_cost(plain) - 1)
    assert len(r.keys) == 5 and len(r.memories) == 6 and not any(k.aliases for k in r.keys)
    del plain.keys[KEYS_BEFORE_MEMORIES:]
    r = fit_budget(result(), text_cost(plain) - 1)
    assert len(r.keys) == KEYS_BEFORE_MEMORIES and len(r.memories) == 5
    assert [m.hops for m in r.memories] == [0, 0, 0, 1, 1]  # the direct tail costs no more than the associated
    r = fit_budget(result(), text_cost(plain) - 200)
    assert len(r.keys) == KEYS_BEFORE_MEMORIES and 1 < len(r.memories) < 5
    assert [m.memory_id for m in r.memories] == sorted(m.memory_id for m in r.memories)  # tails went, order kept
    r = fit_budget(result(), 60)
    assert len(r.keys) == 1 and [m.memory_id for m in r.memories] == [f"m_{0:020x}"]
    assert r.memories[0].content.endswith("…") and text_cost(r) <= 60
