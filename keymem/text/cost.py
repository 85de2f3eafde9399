"""What a text costs an agent in tokens, estimated without a tokenizer.

A tool's result is measured by the WordPiece tokens of its text (MiniLM's uncased vocabulary, as
docs/BENCHMARKS.md counts them), and keymem may serve a store embedded by any model, or none
loaded yet. So the estimate is built from the text's shape, and errs high: a budget kept by the
estimate is kept by the count (measured on recall results, LoCoMo turns and the association
cases: 8-12% above the count in total, never below it on a whole recall result).

Pieces: a memory or key id (``m_…``, ``k_…``) its prefix plus one token per two hex letters or
digits of each run; a run of digits one per two; a lower-case word one token up to
``COMMON_WORD`` letters and one more per ``COMMON_PIECE`` after (common words are whole pieces);
a capitalised or upper-case word (names, acronyms: split more often) one up to ``NAME_WORD`` and
one more per ``NAME_PIECE``; any other letter (Cyrillic, CJK, ...) one each, a Hangul syllable
three (its jamo); every other visible character one.
"""

from __future__ import annotations

import math
import re
import unicodedata

ID_PREFIX = 4  # "m", "_" and the pieces a hex run adds over one per two characters
COMMON_WORD, COMMON_PIECE = 6, 5.0
NAME_WORD, NAME_PIECE = 5, 3.5
HANGUL_SYLLABLE = 3  # an uncased WordPiece vocabulary splits a syllable into its jamo

_PIECE = re.compile(r"\b[mk]_[0-9a-f]{20}\b|[a-z]+|[A-Z][a-z]+|[A-Z]+|[0-9]+|\S", re.ASCII)
_HEX_RUN = re.compile(r"[0-9]+|[a-f]+")


def _fold(text: str) -> str:
    """Latin letters without their accents (``café`` is one piece, as ``cafe``)."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _halves(run: str) -> int:
    return (len(run) + 1) // 2


def _word(piece: str) -> int:
    whole, per = (COMMON_WORD, COMMON_PIECE) if piece.islower() else (NAME_WORD, NAME_PIECE)
    return 1 + math.ceil(max(0, len(piece) - whole) / per)


def estimate_tokens(text: str) -> int:
    """The WordPiece tokens ``text`` is estimated to cost (see the module docstring); 0 for ""."""
    total = 0
    for piece in _PIECE.findall(_fold(text)):
        first = piece[0]
        if len(piece) == 22 and piece[1] == "_":
            total += ID_PREFIX + sum(map(_halves, _HEX_RUN.findall(piece[2:])))
        elif first.isdigit():
            total += _halves(piece)
        elif first.isascii() and first.isalpha():
            total += _word(piece)
        elif "\uac00" <= first <= "\ud7a3":
            total += HANGUL_SYLLABLE
        else:
            total += 1
    return total
