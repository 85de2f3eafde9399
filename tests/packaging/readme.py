"""The two commands of README.md's Quick start: one to a working memory, one to a passing test run.

They are the command lines of the first ```bash block under the "## Quick start" heading, in that
order (comment lines and blank lines aside). tests/packaging/test_readme.py and .ci/run run them
from a fresh clone; ``python3 tests/packaging/readme.py memory|tests`` prints one (stdlib only).
"""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "## Quick start"
NAMES = ("memory", "tests")


def readme_commands(readme: Path = README) -> dict[str, str]:
    """``{"memory": ..., "tests": ...}``, from the Quick start's first bash block."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(HEADING)
    except ValueError:
        raise ValueError(f"{readme}: no '{HEADING}' heading") from None
    block: list[str] | None = None
    for line in lines[start + 1:]:
        if block is None:
            if line.startswith("## "):
                break
            if line.strip() == "```bash":
                block = []
        elif line.strip() == "```":
            break
        elif line.strip() and not line.lstrip().startswith("#"):
            block.append(line.strip())
    if block is None or len(block) != len(NAMES):
        raise ValueError(f"{readme}: the first ```bash block under '{HEADING}' must hold {len(NAMES)} commands, "
                         f"found {block}")
    return dict(zip(NAMES, block, strict=True))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in NAMES:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(NAMES)}")
    print(readme_commands()[sys.argv[1]])
