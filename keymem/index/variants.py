"""Forms of one key: how agents write the same thing differently, and which keys only look alike.

Two memories about one thing often carry it under different key texts: "Terraform" and
"Terraform Cloud", "MySQL" and "MySQL 8", "Rosalind" and "Rosalind Achterberg", "RHEL 8" and
"RHEL8", "Pydantic v1" and "Pydantic 1.x", "k8s" and "Kubernetes", "QBR" and "quarterly
business review". Exact key text breaks the chain between them. A key's *forms* are
signatures that two such keys share:

* ``F:`` its folded text: case, spaces and hyphens, possessive, plural (irregular ones too)
  and version spellings ("v1", "1.x", "1.0" -> "1") folded;
* ``P:`` / ``S:`` each leading / trailing run of its words: a key whose whole form is another
  key's leading or trailing run is a shorter form of it ("Terraform" of "Terraform Cloud",
  "equity plan" of "Employee Equity Plan") -- only when the shorter key is specific enough to
  stand for the longer one: a name or proper noun, several words, or written with a capital or
  a digit. A common word ("cloud", "plan") is never a form of every key it ends;
* ``I:`` the initials of a key of several words ("qbr"), which an acronym key matches;
* ``N:`` the numeronym of a long single word ("k8s" for "kubernetes").

Keys that merely share a word stay apart: "Java 11" and "Java 17", "Mark Chen" and "Mark
Lee" have no form in common (neither is a leading or trailing run of the other).
"""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+(?:\.[^\W_]+)*", re.UNICODE)
VERSION = re.compile(r"^v?(\d+)(?:\.(?:x|0|\*))*$", re.I)
NUMERONYM = re.compile(r"^([a-z])(\d{1,2})([a-z])$")
IRREGULAR = {"children": "child", "mice": "mouse", "people": "person", "men": "man", "women": "woman",
             "feet": "foot", "teeth": "tooth", "geese": "goose", "indices": "index", "analyses": "analysis",
             "criteria": "criterion", "data": "datum", "leaves": "leaf", "knives": "knife", "wives": "wife",
             "lives": "life", "shelves": "shelf", "halves": "half"}
MIN_FORM = 3  # a shorter form needs at least this many characters ("Go" stands for nothing)


def words(text: str) -> list[str]:
    """Folded words of a key: lower case, possessive dropped, plural and version spellings folded."""
    out = []
    for w in WORD.findall(text.replace("’", "'").replace("'s ", " ").removesuffix("'s").lower()):
        v = VERSION.match(w)
        if v:
            out.append(v.group(1))
        elif w in IRREGULAR:
            out.append(IRREGULAR[w])
        elif len(w) > 3 and w.isalpha() and w.endswith("s") and not w.endswith("ss"):
            out.append(w[:-3] + "y" if w.endswith("ies") else w[:-1])
        else:
            out.append(w)
    return out


def specific(text: str, key_type: str, n_words: int) -> bool:
    """Whether a key may stand for a longer key it begins or ends (see the module docstring)."""
    return key_type != "concept" or n_words >= 2 or any(c.isupper() or c.isdigit() for c in text)


def _runs(ws: list[str]) -> list[tuple[str, str]]:
    """Each leading and trailing run of a key's words, folded, shorter than the key."""
    return [("".join(ws[:i]), "".join(ws[i:])) for i in range(1, len(ws))]


def _initials(ws: list[str]) -> str:
    return "".join(w[0] for w in ws if w.isalpha())


def _numeronym(text: str) -> str | None:
    """"k8s" for "Kubernetes": of the word as written (a long single word), else None."""
    raw = text.strip().lower()
    return f"{raw[0]}{len(raw) - 2}{raw[-1]}" if raw.isalpha() and len(raw) >= 5 else None


def forms(text: str, key_type: str) -> list[str]:
    """The signatures a key is indexed under."""
    ws = words(text)
    if not ws:
        return []
    out = [f"F:{''.join(ws)}"]
    for lead, trail in _runs(ws):
        out += [f"P:{lead}", f"S:{trail}"]
    if len(ws) >= 2:
        out.append(f"I:{_initials(ws)}")
    elif n := _numeronym(text):
        out.append(f"N:{n}")
    return out


def lookups(text: str, key_type: str) -> list[str]:
    """The signatures under which this key's other forms are indexed."""
    ws = words(text)
    if not ws:
        return []
    full = "".join(ws)
    out = [f"F:{full}"]
    if len(full) >= MIN_FORM and specific(text, key_type, len(ws)):
        out += [f"P:{full}", f"S:{full}"]  # longer keys this one begins or ends
    for lead, trail in _runs(ws):  # shorter keys that begin or end this one (is_form_of checks them)
        out += [f"F:{lead}", f"F:{trail}"]
    if len(ws) >= 2:
        out.append(f"F:{_initials(ws)}")  # its acronym, as a key
    elif full.isalpha() and 2 <= len(full) <= 6 and text.isupper():
        out.append(f"I:{full}")  # an acronym: keys of several words with these initials
    if len(ws) == 1 and NUMERONYM.match(full):
        out.append(f"N:{full}")
    elif len(ws) == 1 and (n := _numeronym(text)):
        out.append(f"F:{n}")
    return out


def is_form_of(a_text: str, a_type: str, b_text: str, b_type: str) -> bool:
    """Whether key A and key B are forms of one thing (the check behind an index hit)."""
    wa, wb = words(a_text), words(b_text)
    if not wa or not wb:
        return False
    fa, fb = "".join(wa), "".join(wb)
    if fa == fb:
        return True
    if len(wa) > len(wb) or (len(wa) == len(wb) and fa > fb):
        a_text, a_type, b_text, b_type, wa, wb, fa, fb = b_text, b_type, a_text, a_type, wb, wa, fb, fa
    # a is the shorter
    if (len(wa) < len(wb) and len(fa) >= MIN_FORM and specific(a_text, a_type, len(wa))
            and any(fa in run for run in _runs(wb))):
        return True
    if len(wa) == 1 and len(wb) >= 2 and a_text.isupper() and fa == _initials(wb):
        return True
    if len(wa) == 1 and len(wb) == 1:
        ra, rb = a_text.strip().lower(), b_text.strip().lower()  # numeronyms count the letters as written
        for x, y in ((ra, rb), (rb, ra)):
            m = NUMERONYM.match(x)
            if m and y.isalpha() and y[0] == m.group(1) and y[-1] == m.group(3) and len(y) - 2 == int(m.group(2)):
                return True
    return False
