"""Every threshold's evidence is in the repo: each check and sourced value of ``checks/*.toml`` has a ``doc``.

``doc = "docs/sources/rccl.md#mi300x-all-reduce-busbw"`` must name a Markdown file that exists and a heading
in it (GitHub's anchor for the heading), and the figure the check or value uses (a value's number, or the
literal number in ``fail_if``/``warn_if``) must be written in the text under that heading. An operator who
reads "fail if < 304" in a finding can then look up, in this repository, why 304.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from console.checks import load_pack_file
from console.checks.spec import CheckSpec, SourcedValue

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources"
PACKS = sorted((ROOT / "checks").glob("*.toml"))

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
# A number standing alone: not part of a word ("MI300X", "x16", "gfx942") nor of a longer number.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\w|\.\d)")
_LINK = re.compile(r"\]\(([^)\s]*)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation and symbols dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]*>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def sections(markdown: str) -> dict[str, str]:
    """Anchor -> the text under that heading, up to the next heading; a repeated anchor gets -1, -2 as on GitHub."""
    found: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    current: list[str] | None = None
    fenced = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            if current is not None:
                current.append(line)
            continue
        anchor = github_anchor(heading.group(2))
        if anchor in seen:
            seen[anchor] += 1
            anchor = f"{anchor}-{seen[anchor]}"
        else:
            seen[anchor] = 0
        current = found.setdefault(anchor, [])
    return {anchor: "\n".join(lines) for anchor, lines in found.items()}


@cache
def _sections_of(path: Path) -> dict[str, str]:
    return sections(path.read_text(encoding="utf-8"))


def _figures(item: CheckSpec | SourcedValue) -> list[float | str]:
    """The figures a check or value uses: a value's number (or text, a device ID), a condition's literal number.

    A condition's other literals (``== false``, ``!= none``) are states, not figures anyone has to look up.
    """
    if isinstance(item, SourcedValue):
        value = item.value
        if isinstance(value, bool):
            return []
        return [float(value)] if isinstance(value, int | float) else [value]
    literals = [cond.resolve({}) for cond in item.conditions() if cond is not None and not cond.operand.startswith("$")]
    return [float(v) for v in literals if isinstance(v, int | float) and not isinstance(v, bool)]


def _written(figure: float | str, text: str) -> bool:
    if isinstance(figure, str):
        return figure.lower() in text.lower()
    return any(float(number) == figure for number in _NUMBER.findall(text))


def doc_problems(doc: str | None, figures: list[float | str], root: Path) -> list[str]:
    """What is wrong with one ``doc``: missing, no such file, no such heading, or the figure not under it."""
    if doc is None:
        return ["has no doc"]
    file, _, anchor = doc.partition("#")
    path = root / file
    if not path.is_file():
        return [f"doc {doc}: {file} does not exist"]
    text = _sections_of(path).get(anchor)
    if text is None:
        return [f"doc {doc}: {file} has no heading with the anchor #{anchor}"]
    return [
        f"doc {doc}: {_shown(figure)} is not written under the heading"
        for figure in figures
        if not _written(figure, text)
    ]


def _shown(figure: float | str) -> str:
    if isinstance(figure, float) and figure.is_integer():
        return str(int(figure))
    return str(figure)


def pack_problems(pack_path: Path, root: Path) -> list[str]:
    """Every check, variable and timeout of one pack file whose ``doc`` does not hold up, one line each."""
    pack = load_pack_file(pack_path)
    problems: list[str] = []
    for name, variable in pack.pack.vars.items():
        where = f"{pack_path.name}: pack.vars.{name}"
        if not isinstance(variable, SourcedValue):
            problems.append(f"{where}: has no source and no doc")
            continue
        problems += [f"{where}: {p}" for p in doc_problems(variable.doc, _figures(variable), root)]
    for probe, timeout in pack.pack.timeouts.items():
        where = f"{pack_path.name}: pack.timeouts.{probe}"
        problems += [f"{where}: {p}" for p in doc_problems(timeout.doc, _figures(timeout), root)]
    for check in pack.checks:
        where = f"{pack_path.name}: check {check.id}"
        problems += [f"{where}: {p}" for p in doc_problems(check.doc, _figures(check), root)]
    return problems


@pytest.mark.parametrize("pack_path", PACKS, ids=lambda p: p.name)
def test_every_check_and_value_cites_a_heading_that_states_its_figure(pack_path: Path) -> None:
    assert pack_problems(pack_path, ROOT) == []


def test_the_builtin_packs_are_all_checked() -> None:
    assert {p.name for p in PACKS} >= {"common.toml", "mi300x.toml", "mi250x.toml"}


def test_every_source_document_is_in_the_index_and_its_links_resolve() -> None:
    documents = sorted(SOURCES.glob("*.md"))
    index = (SOURCES / "README.md").read_text(encoding="utf-8")
    broken = [
        f"README.md does not list {d.name}" for d in documents if d.name != "README.md" and f"({d.name})" not in index
    ]
    for document in documents:
        for target in _LINK.findall(document.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            file, _, anchor = target.partition("#")
            path = (document.parent / file) if file else document
            if not path.is_file():
                broken.append(f"{document.name}: link to {target}: no such file")
            elif anchor and anchor not in _sections_of(path.resolve()):
                broken.append(f"{document.name}: link to {target}: no such heading")
    assert broken == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("MI350X and MI355X all-reduce busbw", "mi350x-and-mi355x-all-reduce-busbw"),
        ("a2a GPU pair vs the node's pairs", "a2a-gpu-pair-vs-the-nodes-pairs"),
        ("Board power (TBP)", "board-power-tbp"),
        ("`amd-smi` answers", "amd-smi-answers"),
        ("Retired pages: 90 % / 100 %", "retired-pages-90---100-"),
        ("snake_case stays", "snake_case-stays"),
    ],
)
def test_anchors_are_githubs(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_sections_end_at_the_next_heading_and_repeat_as_github_numbers_them() -> None:
    found = sections("# Top\nintro\n## Floor\n304 GB/s\n```\n# not a heading\n```\n### Floor\n350 GB/s\n")
    assert set(found) == {"top", "floor", "floor-1"}
    assert "304" in found["floor"] and "# not a heading" in found["floor"] and "350" not in found["floor"]
    assert "350" in found["floor-1"]


_CHECK = (
    '[[checks]]\nid = "{id}"\ntitle = "t"\nfamily = "pcie"\nmetric = "gpu.pcie_width"\nfail_if = "{fail_if}"\n'
    'source = "s"\nsource_kind = "estimate"\n{doc}\n'
)


def _pack(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "checks" / "mi300x.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text('[pack]\nmodel = "MI300X"\n\n' + body, encoding="utf-8")
    return path


def test_a_missing_doc_file_heading_or_figure_is_caught(tmp_path: Path) -> None:
    sources = tmp_path / "docs" / "sources"
    sources.mkdir(parents=True)
    (sources / "links.md").write_text(
        "# Links\n\n## Lane count\n\n**16 lanes**: the link must be x16.\n\n## Other\n\n8 lanes\n", encoding="utf-8"
    )
    doc = 'doc = "docs/sources/{}"'.format
    body = "".join(
        [
            "[pack.vars]\nbare = 3\n\n",
            '[pack.vars.floor]\nvalue = 8.5\nsource = "s"\nsource_kind = "estimate"\n'
            'doc = "docs/sources/links.md#other"\n\n',
            _CHECK.format(id="good", fail_if="< 16", doc=doc("links.md#lane-count")),
            _CHECK.format(id="no_file", fail_if="< 16", doc=doc("gone.md#lane-count")),
            _CHECK.format(id="no_anchor", fail_if="< 16", doc=doc("links.md#lane-width")),
            _CHECK.format(id="wrong_figure", fail_if="< 8", doc=doc("links.md#lane-count")),
            _CHECK.format(id="no_doc", fail_if="< 16", doc=""),
        ]
    )
    problems = pack_problems(_pack(tmp_path, body), tmp_path)
    assert problems == [
        "mi300x.toml: pack.vars.bare: has no source and no doc",
        "mi300x.toml: pack.vars.floor: doc docs/sources/links.md#other: 8.5 is not written under the heading",
        "mi300x.toml: check no_file: doc docs/sources/gone.md#lane-count: docs/sources/gone.md does not exist",
        "mi300x.toml: check no_anchor: doc docs/sources/links.md#lane-width: docs/sources/links.md has no heading"
        " with the anchor #lane-width",
        "mi300x.toml: check wrong_figure: doc docs/sources/links.md#lane-count: 8 is not written under the heading",
        "mi300x.toml: check no_doc: has no doc",
    ]


_ACTION_DOC = re.compile(r"docs/sources/[\w-]+\.md#[\w-]+")


@pytest.mark.parametrize("pack_path", PACKS, ids=lambda p: p.name)
def test_every_check_says_what_a_failure_calls_for_and_where_that_comes_from(pack_path: Path) -> None:
    """Issue 19, item 2: a check that can FAIL names its action; every check cites the heading explaining it."""
    problems = []
    for check in load_pack_file(pack_path).checks:
        can_fail = check.fail_if is not None or check.compare == "pin" or check.relative_to is not None
        if can_fail and check.action is None:
            problems.append(f"{check.id}: can FAIL but names no action")
        cited = _ACTION_DOC.search(check.action_source or "")
        if cited is None:
            problems.append(f"{check.id}: action_source cites no docs/sources heading")
            continue
        file, _, anchor = cited.group(0).partition("#")
        if anchor not in _sections_of(ROOT / file):
            problems.append(f"{check.id}: {cited.group(0)} is no heading")
        elif (
            check.action is not None
            and file.endswith("actions.md")
            and f"`{check.action.value}`" not in _sections_of(ROOT / file)[anchor]
        ):
            problems.append(f"{check.id}: {cited.group(0)} does not name `{check.action.value}`")
    assert problems == []
