"""The README and docs/*.md cite only what is in the repository: every relative link
resolves to a file (and its #anchor to a heading there), and every ``path/like/this.py``
mention names a file or folder that exists. The contract documents are copied into
docs/spec/ byte for byte, so a reader of the repository can open every section cited."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Made at run time, never in the repository (gitignored).
RUNTIME = ("var/", "tests/artifacts/", ".venv/")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*:/+\S*")
# a/b/c.ext or a/b/ (each part starting with a letter, "_" or "."), not inside a word or URL
PATH = re.compile(
    r"(?<![\w./-])((?:[A-Za-z_.][\w.-]*/)+(?:[A-Za-z_][\w-]*\.[A-Za-z]\w*)?)(?![\w/-])"
)
SHARED_SPEC = Path("/work/shared/spec")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to -."""
    text = unicodedata.normalize("NFKC", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return {github_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def prose(path: Path) -> str:
    """The document without URLs (their paths are not files here) and link targets
    (relative to the document: ``test_every_relative_link_resolves`` checks them)."""
    text = re.sub(r"\]\([^)\s]+\)", "]", path.read_text(encoding="utf-8"))
    return URL.sub(" ", text)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for target in LINK.findall(document.read_text(encoding="utf-8")):
        if URL.match(target) or target.startswith("mailto:"):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (document.parent / file_part).resolve() if file_part else document
        there = resolved.exists() and resolved.is_relative_to(ROOT)
        if not there or (anchor and resolved.suffix == ".md" and anchor not in anchors(resolved)):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_path_mentioned_exists(document: Path) -> None:
    top = {entry.name for entry in ROOT.iterdir()} | {r.split("/")[0] for r in RUNTIME}
    mentioned = {  # a file with an extension, or a folder from the top (not sed's "s/")
        m for m in PATH.findall(prose(document)) if "." in m or m.split("/")[0] in top
    }
    missing = sorted(
        path
        for path in mentioned
        if not path.startswith(RUNTIME) and not (ROOT / path.split("#")[0]).exists()
    )
    assert missing == []
    assert mentioned, "the pattern no longer finds any path"


def test_the_contract_documents_are_in_the_repository_unchanged() -> None:
    names = sorted(p.name for p in (ROOT / "docs" / "spec").glob("*.md"))
    assert names == ["config.md", "decisions.md", "interface.md"]
    if not SHARED_SPEC.is_dir():
        pytest.skip("the shared contract folder is not on this machine: nothing to compare")
    for name in names:
        copy = (ROOT / "docs" / "spec" / name).read_bytes()
        assert copy == (SHARED_SPEC / name).read_bytes(), f"docs/spec/{name} differs"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_sections_of_the_contract_are_cited_by_link(document: Path) -> None:
    """A citation such as "interface 2.9" or "decisions §4" is a link to its section."""
    text = document.read_text(encoding="utf-8")
    unlinked = re.findall(r"(?<!\[)\b(?:interface|decisions)\s+§?\d", text)
    assert unlinked == []
    assert "shared/spec" not in text
