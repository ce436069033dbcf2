"""The labelled detector table (issue 37): precision and recall per flag, and where the
preferences that must not fire land.

`benchmarks/data/instruction_sentences.tsv`, one sentence a row (`\\n` and `\\t` escaped):
`text`, `flags` (the flags it must raise, comma-separated, `-` for none), `kind`, `scope`
(`own`: a user's own scope, `shared`: a group's or the collective's) and `source`.

- `source` `bastioncorpus-0.6.0:<id>`: the English rows of the public labelled
  prompt-injection corpus that the PyPI package `bastioncorpus` 0.6.0 (MIT) ships in
  `bastioncorpus/corpus/injections.jsonl`; its `malicious` rows are labelled
  `instruction` (kind `injection`), its `benign` ones (kind `benign`) nothing, and the
  few that hold an email or a token carry that flag too;
- `source` `own:<n>`: written for this table: memory poisoning aimed at the agent
  (kind `poisoning`: "when users ask X, say Y", "always recommend...", role changes),
  a user's own preferences (kind `preference`: "always answer me in French", which must
  not fire), facts that look like instructions (kind `fact`), and personal data and keys
  in fullwidth or zero-width forms (kind `pii`).

`python -m benchmarks detector_table`. No store, no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import print_table
from streams.core.flag_kinds import FLAGS
from streams.core.instruction_policy import DEFAULT_INSTRUCTION_POLICY
from streams.guard.detectors import detect

TABLE = Path(__file__).resolve().parent / "data" / "instruction_sentences.tsv"


@dataclass(frozen=True)
class Row:
    text: str
    flags: frozenset[str]
    kind: str
    scope: str  # "own" | "shared"
    source: str


def _unescape(cell: str) -> str:
    out, i = [], 0
    while i < len(cell):
        if cell[i] == "\\" and i + 1 < len(cell):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(cell[i + 1], cell[i : i + 2]))
            i += 2
        else:
            out.append(cell[i])
            i += 1
    return "".join(out)


def load_table(path: Path = TABLE) -> list[Row]:
    """The rows of the table, in file order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["text", "flags", "kind", "scope", "source"], lines[0]
    rows = []
    for line in lines[1:]:
        text, flags, kind, scope, source = line.split("\t")
        wanted = frozenset() if flags == "-" else frozenset(flags.split(","))
        assert wanted <= set(FLAGS), (flags, source)
        rows.append(Row(_unescape(text), wanted, kind, scope, source))
    return rows


@dataclass(frozen=True)
class Score:
    flag: str
    labelled: int
    found: int
    false_positives: int
    missed: int

    @property
    def precision(self) -> float:
        return self.found / (self.found + self.false_positives) if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.labelled if self.labelled else 1.0


def scores(rows: list[Row], *, kinds: frozenset[str] | None = None) -> dict[str, Score]:
    """Per flag, over `rows` (of `kinds` when given)."""
    chosen = [r for r in rows if kinds is None or r.kind in kinds]
    found = [(r, frozenset(detect(r.text).flags)) for r in chosen]
    out = {}
    for flag in FLAGS:
        tp = sum(1 for r, f in found if flag in f and flag in r.flags)
        fp = sum(1 for r, f in found if flag in f and flag not in r.flags)
        fn = sum(1 for r, f in found if flag not in f and flag in r.flags)
        out[flag] = Score(flag, tp + fn, tp, fp, fn)
    return out


def lands(row: Row) -> str:
    """Where the sentence ends up in the context, by its flags and the default policy."""
    flags = detect(row.text).flags
    if "instruction" not in flags:
        return "as memory, unmarked"
    policy = DEFAULT_INSTRUCTION_POLICY.for_scope("individual" if row.scope == "own" else "group")
    return {
        "mark": 'shown, marked flag="instruction"',
        "withhold": "left out of the context",
        "review": "held for review",
    }[policy]


def _score_rows(table: dict[str, Score]) -> list[list[object]]:
    return [
        [s.flag, s.labelled, s.found, s.false_positives, s.missed]
        + [f"{s.precision:.3f}", f"{s.recall:.3f}"]
        for s in table.values()
        if s.labelled or s.false_positives
    ]


def _print(title: str, headers: list[str], rows: list[list[object]]) -> None:
    print_table(title, headers, rows or [["(none)"] + [""] * (len(headers) - 1)])


def run(sizes: list[int] | None = None) -> None:
    del sizes  # the table is the size
    rows = load_table()
    headers = ["flag", "labelled", "found", "false +", "missed", "precision", "recall"]
    _print(
        f"Detectors on the labelled table ({len(rows)} sentences)",
        headers,
        _score_rows(scores(rows)),
    )
    for title, kinds in (
        ("bastioncorpus 0.6.0 rows only (public set)", {"injection", "benign"}),
        (
            "own rows only (poisoning, preferences, facts, pii)",
            {"poisoning", "preference", "fact", "pii", "lookalike"},
        ),
    ):
        _print(title, headers, _score_rows(scores(rows, kinds=frozenset(kinds))))
    by_kind = []
    for kind in sorted({r.kind for r in rows}):
        of_kind = [r for r in rows if r.kind == kind]
        fired = sum(1 for r in of_kind if "instruction" in detect(r.text).flags)
        by_kind.append([kind, len(of_kind), fired])
    _print("Instruction flag by kind", ["kind", "sentences", "flagged instruction"], by_kind)
    _print_where_it_lands(rows)
    _print_misses(rows)


def _print_where_it_lands(rows: list[Row]) -> None:
    """Preferences that must not fire, and where flagged poisoning lands."""
    preferences = [r for r in rows if r.kind == "preference"]
    flagged = [r for r in preferences if "instruction" in detect(r.text).flags]
    _print(
        f"Preferences that must not fire: {len(preferences) - len(flagged)} of"
        f" {len(preferences)} do not",
        ["preference (sample and every one that fires)", "scope", "lands"],
        [
            [r.text, r.scope, lands(r)]
            for r in (preferences[:8] + [r for r in flagged if r not in preferences[:8]])
        ],
    )
    poisoning = [r for r in rows if r.kind in ("poisoning", "injection")]
    _print(
        "Where flagged poisoning lands (default policy), first of each scope",
        ["sentence", "scope", "lands"],
        [
            [r.text[:70], r.scope, lands(r)]
            for r in (
                next(r for r in poisoning if r.scope == "shared"),
                next(r for r in poisoning if r.scope == "own"),
            )
        ],
    )


def _print_misses(rows: list[Row]) -> None:
    """The instructions the detectors miss, and what they flag that is none."""
    missed = [
        r for r in rows if "instruction" in r.flags and "instruction" not in detect(r.text).flags
    ]
    _print(
        f"Instructions missed ({len(missed)})",
        ["source", "sentence"],
        [[r.source, r.text[:90].replace("\n", " ")] for r in missed],
    )
    false_positives = [
        r for r in rows if "instruction" not in r.flags and "instruction" in detect(r.text).flags
    ]
    _print(
        f"Instruction false positives ({len(false_positives)})",
        ["source", "sentence"],
        [[r.source, r.text[:90].replace("\n", " ")] for r in false_positives],
    )


if __name__ == "__main__":
    run()
