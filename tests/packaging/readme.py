"""README.md's commands that tests run as they are written (stdlib only).

- The Quick start's two: one to a working memory, one to a passing test run: the command lines of the
  first ```bash block under the "## Quick start" heading, in that order (comment lines and blank lines
  aside). tests/packaging/test_readme.py and .ci/run run them from a fresh clone.
- The agent commands of "## Use it from an agent": the ```bash block after "**Claude Code**" and the one
  after "**Codex CLI**" (one command each), and the first line of the ```bash block under "### The config
  file" (``keymem init --model minilm``): tests/packaging/test_agent_commands.py runs them.

``python3 tests/packaging/readme.py memory|tests|claude|codex|init`` prints one.
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
    block = _bash_block_after(lines, start, readme, HEADING)
    if len(block) != len(NAMES):
        raise ValueError(f"{readme}: the first ```bash block under '{HEADING}' must hold {len(NAMES)} commands, "
                         f"found {block}")
    return dict(zip(NAMES, block, strict=True))


AGENTS_HEADING = "## Use it from an agent"
CONFIG_HEADING = "### The config file"


def _bash_block_after(lines: list[str], start: int, readme: Path, what: str) -> list[str]:
    """The command lines of the first ```bash block after line ``start`` (before the next "## " heading)."""
    block: list[str] | None = None
    for line in lines[start + 1:]:
        if block is None:
            if line.startswith("## "):
                break
            if line.strip() == "```bash":
                block = []
        elif line.strip() == "```":
            return block
        elif line.strip() and not line.lstrip().startswith("#"):
            block.append(line.strip())
    raise ValueError(f"{readme}: no ```bash block after {what!r}")


def agent_commands(readme: Path = README) -> dict[str, str]:
    """``{"claude": ..., "codex": ..., "init": ...}``: the agent configurations and ``keymem init``."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    out: dict[str, str] = {}
    try:
        section = lines.index(AGENTS_HEADING)
        for name, label in (("claude", "**Claude Code**"), ("codex", "**Codex CLI**")):
            at = next(i for i in range(section + 1, len(lines)) if lines[i].startswith(label))
            block = _bash_block_after(lines, at, readme, label)
            if len(block) != 1:
                raise ValueError(f"{readme}: the ```bash block after {label!r} must hold one command, found {block}")
            out[name] = block[0]
        out["init"] = _bash_block_after(lines, lines.index(CONFIG_HEADING), readme, CONFIG_HEADING)[0]
    except (ValueError, StopIteration) as exc:
        raise ValueError(f"{readme}: {exc or 'an agent command is missing'}") from None
    return out


if __name__ == "__main__":
    found = {**readme_commands(), **agent_commands()} if len(sys.argv) == 2 else {}
    if sys.argv[1:2] == [] or sys.argv[1] not in found:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join([*NAMES, 'claude', 'codex', 'init'])}")
    print(found[sys.argv[1]])
