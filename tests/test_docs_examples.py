"""Every ```python block of README.md and docs/*.md runs, and every `pyfxprof.…` name they cite
exists.

The blocks of one file run in order in one namespace (a file reads as one session: a later
block may use what an earlier one made), in a fresh temporary directory. So that they run in
seconds, ``torchvision.models.resnet18`` is replaced by a small Conv/BN/ReLU model with the same
input and output shapes (any 3-channel image in, 1000 class scores out); everything else runs
as written.

A block that cannot run here (it needs a GPU, or several processes started by torchrun) is
marked on the line just above its fence with

    <!-- docs-test: skip (needs a GPU) -->

(the reason in parentheses is required). Such blocks are counted, and at most SKIP_BUDGET of
them are allowed in all the docs.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP_MARK = re.compile(r"^<!-- docs-test: skip \((?P<reason>[^)]+)\) -->$")
SKIP_BUDGET = 5


@dataclass
class Block:
    """One ```python block: where it is, its code, and why it is skipped (None: it runs)."""

    path: Path
    line: int          # line of the opening fence (1-based)
    code: str
    skip: str | None


def python_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a markdown file, in order, with their skip markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, k = [], 0
    while k < len(lines):
        if lines[k].strip() == "```python":
            end = next(j for j in range(k + 1, len(lines)) if lines[j].strip() == "```")
            previous = next((lines[j].strip() for j in range(k - 1, -1, -1) if lines[j].strip()),
                            "")
            mark = SKIP_MARK.match(previous)
            blocks.append(Block(path, k + 1, "\n".join(lines[k + 1:end]) + "\n",
                                mark.group("reason") if mark else None))
            k = end
        k += 1
    return blocks


def small_resnet18_stand_in(*args, **kwargs) -> torch.nn.Module:
    """ResNet-18's interface (N x 3 x H x W images -> N x 1000) in a few small layers."""
    return torch.nn.Sequential(
        torch.nn.AdaptiveAvgPool2d(16), torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(8, 1000))


@pytest.fixture
def docs_session(tmp_path, monkeypatch):
    """A temporary working directory, the small ResNet-18 stand-in, one torch thread (these
    tiny ops only contend for a loaded machine's cores otherwise), and the advisor's rule
    registry restored afterwards (docs register their own example rules)."""
    import torchvision

    from pyfxprof.analyses import advisor# registers the built-in rules before the snapshot
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(torchvision.models, "resnet18", small_resnet18_stand_in)
    rules, threads = dict(advisor.RULES), torch.get_num_threads()
    torch.set_num_threads(1)
    yield tmp_path
    torch.set_num_threads(threads)
    advisor.RULES.clear()
    advisor.RULES.update(rules)


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_the_python_blocks_of_each_document_run(path, docs_session):
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    for block in python_blocks(path):
        if block.skip is None:
            code = compile(block.code, f"{path.relative_to(ROOT)}:{block.line}", "exec")
            exec(code, namespace)  # noqa: S102 (the repository's own documentation)


def test_skipped_blocks_say_why_and_stay_few():
    blocks = [b for path in DOCS for b in python_blocks(path)]
    skipped = [f"{b.path.name}:{b.line} ({b.skip})" for b in blocks if b.skip is not None]
    assert len(blocks) - len(skipped) >= 8, "the docs lost their runnable examples"
    assert len(skipped) <= SKIP_BUDGET, f"too many docs blocks are not run: {skipped}"
    for path in DOCS:
        marks = [line for line in path.read_text(encoding="utf-8").splitlines()
                 if SKIP_MARK.match(line.strip())]
        assert len(marks) == sum(b.skip is not None for b in blocks if b.path == path), \
            f"{path.name}: a skip marker must be the line just above a ```python fence"


def test_the_block_reader_honours_the_skip_marker(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python\nx = 1\n```\n\n<!-- docs-test: skip (needs a GPU) -->\n"
                    "```python\nraise SystemExit\n```\n```\nnot python\n```\n")
    blocks = python_blocks(page)
    assert [(b.line, b.code, b.skip) for b in blocks] == [
        (3, "x = 1\n", None), (8, "raise SystemExit\n", "needs a GPU")]


#: `pyfxprof.a.b.c` inside backticks (a module, or a module's attribute).
CITED_NAME = re.compile(r"`(pyfxprof(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def resolves(dotted: str) -> bool:
    """True when the longest importable module prefix of `dotted` has the rest as attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_every_cited_pyfxprof_name_exists():
    cited = {(path.name, name) for path in DOCS
             for name in CITED_NAME.findall(path.read_text(encoding="utf-8"))}
    assert len(cited) > 10
    missing = sorted(f"{page}: {name}" for page, name in cited if not resolves(name))
    assert missing == []
