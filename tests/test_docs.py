"""The documents stay in the repository and true to each other: no source file or document cites
a file outside the repository, every numbered citation of a document (``SEMANTICS.md §4.3``,
``ARCHITECTURE.md §3.4``, ``paper 000 §3.2``) names a section that exists, README stays within
150 lines with the commands ``.ci/run`` reads from it, and relative links resolve.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
# What is read: the sources, tests, benchmarks, examples, build files and every document.
ROOTS = ("src_cpp", "cq_py", "cq_core", "tests", "benchmarks", "examples", "cmake", "docs", ".ci")
TOP_FILES = ("README.md", "setup.py", "pyproject.toml", "CMakeLists.txt")
SUFFIXES = {".h", ".cc", ".cpp", ".py", ".pyi", ".md", ".cqlt", ".cql", ".cmake", ".txt", ".sh",
            ".toml", ""}  # fmt: skip
SKIP_DIRS = {"__pycache__", "build", ".venv", ".git"}
THIS = Path(__file__).resolve()

# Written in two pieces, so that this file does not match itself.
OUTSIDE = re.compile(
    "|".join([r"\.\./" + "shared", "/work/" + "shared", r"\b(?:SPEC|STYLE) " + "§"])
)
DOC_CITATION = re.compile(
    r"\b(SEMANTICS|ARCHITECTURE)\.md "
    r"(§\d+(?:\.\d+)*(?:(?:, | and |–|-)§?\d+(?:\.\d+)*)*)"
)
PAPER_CITATION = re.compile(r"\bpaper (\d{3})(?:'s [\w\s-]*?)?,? \(?(§\d+(?:\.\d+)*|Figs?\. \d+)")
HEADING_NUMBER = re.compile(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", re.MULTILINE)
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def text_files() -> list[Path]:
    files = [REPO / name for name in TOP_FILES if (REPO / name).is_file()]
    files += [
        p
        for root in ROOTS
        for p in sorted((REPO / root).rglob("*"))
        if p.is_file()
        and p.suffix in SUFFIXES
        and not SKIP_DIRS.intersection(p.relative_to(REPO).parts)
        and p.resolve() != THIS
    ]
    return files


def read(p: Path) -> str:
    return p.read_text(encoding="utf-8", errors="replace")


def sections(doc: str) -> set[str]:
    return set(HEADING_NUMBER.findall(read(DOCS / f"{doc}.md")))


def paper_sections() -> dict[str, set[str]]:
    """For each paper of docs/PAPERS.md, the sections (§x.y) and figures (Fig. n) it lists."""
    out: dict[str, set[str]] = {}
    for block in re.split(r"^## ", read(DOCS / "PAPERS.md"), flags=re.MULTILINE)[1:]:
        paper = block[:3]
        if not paper.isdigit():
            continue
        cited = {f"§{n}" for n in re.findall(r"§(\d+(?:\.\d+)*)", block)}
        for figs in re.findall(r"Figs?\. ([\d, and]+)", block):
            cited |= {f"Fig. {n}" for n in re.findall(r"\d+", figs)}
        out[paper] = cited
    return out


def test_the_files_are_found():
    files = text_files()
    assert len(files) > 200, f"the sources were not found under {REPO}"
    assert (DOCS / "SEMANTICS.md").is_file()


def test_nothing_cites_a_file_outside_the_repository():
    found = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in text_files()
        for n, line in enumerate(read(p).splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == [], "cite docs/SEMANTICS.md or docs/ARCHITECTURE.md instead:\n" + "\n".join(
        found
    )


def test_every_numbered_citation_of_a_document_names_one_of_its_sections():
    known = {doc: sections(doc) for doc in ("SEMANTICS", "ARCHITECTURE")}
    assert {"2.1", "4.3", "7"} <= known["SEMANTICS"], "SEMANTICS.md lost its numbered headings"
    cited = 0
    missing = []
    for p in text_files():
        text = read(p)
        for m in DOC_CITATION.finditer(text):
            for number in re.findall(r"\d+(?:\.\d+)*", m.group(2)):
                cited += 1
                if number not in known[m.group(1)]:
                    line = text.count("\n", 0, m.start()) + 1
                    missing.append(f"{p.relative_to(REPO)}:{line}: {m.group(1)}.md §{number}")
    assert cited > 100, "the citations were not found"
    assert missing == [], "no such section:\n" + "\n".join(missing)


def test_every_citation_of_a_paper_names_a_section_docs_papers_lists():
    papers = paper_sections()
    assert set(papers) == {"000", "001", "002", "003", "004"}
    cited = 0
    missing = []
    for p in text_files():
        text = read(p)
        for m in PAPER_CITATION.finditer(text):
            paper, where = m.group(1), m.group(2)
            figures = [f"Fig. {n}" for n in re.findall(r"\d+", where)]
            for w in [where] if where.startswith("§") else figures:
                cited += 1
                if w not in papers.get(paper, set()):
                    line = text.count("\n", 0, m.start()) + 1
                    missing.append(f"{p.relative_to(REPO)}:{line}: paper {paper} {w}")
    assert cited > 30, "the citations were not found"
    assert missing == [], "not in docs/PAPERS.md:\n" + "\n".join(missing)


def test_readme_is_short_and_keeps_the_commands_ci_runs():
    lines = read(REPO / "README.md").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move detail to docs/"
    # .ci/run reads exactly two `python3 -m venv` lines from this section and runs them.
    start = lines.index("## On a fresh machine")
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    commands = [x for x in lines[start:end] if x.startswith("python3 -m venv ")]
    assert len(commands) == 2, commands


@pytest.mark.parametrize(
    "doc",
    sorted(
        str(p.relative_to(REPO))
        for p in [REPO / "README.md", *DOCS.glob("*.md"), *(REPO / "benchmarks").rglob("*.md")]
    ),
)
def test_relative_links_resolve(doc: str):
    path = REPO / doc
    broken = []
    for target in MARKDOWN_LINK.findall(read(path)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL or an anchor in the same page
        if not (path.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert broken == []
