"""The labelled fidelity set (issue 38): versions with known facts removed, and how well
`streams.memory.fidelity` finds them (precision and recall of the dropped facts).

`benchmarks/data/fidelity_cases.jsonl`, one case a line: `id`, `kind`, `previous` (the
earlier version's text, or null), `absorbed` (`[id, text]` pairs), `text` (the new
version) and the labels `unstated` (absorbed ids the text leaves out) and `dropped`
(previous sentences it leaves out). Built deterministically from the LoCoMo dev
conversations (`shared/data/locomo-dev/`, their per-session `observation` lists) by
`python -m benchmarks.fidelity --build`:

- `absorb`: one speaker's observations of one session are absorbed into a first
  version; the new text restates all but 0, 1 or 2 of them (chosen by a seeded
  random per case), which are the labels;
- `rewrite`: the previous version is that speaker's observations of the session before;
  the new text restates the previous sentences but 0, 1 or 2 (the labels) and adds the
  session's observations.

What the new text restates is a paraphrase, never the sentence as given: each kept fact
goes through one or two of: the name replaced by a pronoun, tense changed, filler words
removed, a synonym for a word (`SYNONYMS`), two facts joined in one sentence; the order
is shuffled. Labels are by construction (a fact is dropped exactly when it was left out),
not by the measure itself. The limits: paraphrases are surface rewrites; a model's
freer rewording (a name for a description) is not in the set.

`python -m benchmarks fidelity` prints precision and recall (goal: both ≥ 0.9). No store,
no model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import print_table
from streams.memory.fidelity import consolidation_fidelity

DATA = Path(__file__).resolve().parent / "data" / "fidelity_cases.jsonl"
LOCOMO = Path(os.environ.get("LOCOMO_DEV_DIR", "/work/shared/data/locomo-dev"))
CONVERSATIONS = ("conv-26", "conv-30", "conv-44")
SYNONYMS = {
    "attended": "went to",
    "inspiring": "moving",
    "currently": "now",
    "recently": "lately",
    "kids": "children",
    "children": "kids",
    "planning": "intending",
    "enjoys": "likes",
    "loves": "adores",
    "started": "began",
    "wants": "hopes",
    "thinks": "believes",
    "happy": "glad",
    "big": "large",
    "great": "wonderful",
}
FILLER = re.compile(r"\b(?:really|very|also|just|recently|currently)\s+", re.IGNORECASE)
TENSE = {" is ": " was ", " has ": " had ", " are ": " were "}


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    previous: str | None
    absorbed: list[tuple[str, str]]
    text: str
    unstated: list[str]
    dropped: list[str]


def _paraphrase(fact: str, speaker: str, rng: random.Random) -> str:
    out = fact.rstrip(".!? ")
    for change in rng.sample(["pronoun", "tense", "filler", "synonym"], k=rng.choice([1, 2])):
        if change == "pronoun" and out.startswith(speaker + " "):
            out = "They " + out[len(speaker) + 1 :]
        elif change == "tense":
            for a, b in TENSE.items():
                out = out.replace(a, b, 1)
        elif change == "filler":
            out = FILLER.sub("", out)
        elif change == "synonym":
            words = [w for w in SYNONYMS if re.search(rf"\b{w}\b", out)]
            if words:
                word = rng.choice(words)
                out = re.sub(rf"\b{word}\b", SYNONYMS[word], out, count=1)
    return out


def _restate(facts: list[str], speaker: str, rng: random.Random) -> list[str]:
    """The kept facts as new sentences: paraphrased, shuffled, some joined in pairs."""
    said = [_paraphrase(f, speaker, rng) for f in facts]
    rng.shuffle(said)
    out: list[str] = []
    while said:
        first = said.pop()
        if said and rng.random() < 0.3:
            second = said.pop()
            first = f"{first}, and {second[0].lower()}{second[1:]}"
        out.append(first + ".")
    return out


def _sessions(conversation: dict) -> list[tuple[int, dict[str, list[str]]]]:
    found = []
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)_observation", key)
        if match and isinstance(value, dict):
            facts = {
                speaker: [item[0].strip() for item in items if item and item[0].strip()]
                for speaker, items in value.items()
            }
            found.append((int(match[1]), facts))
    return sorted(found)


def build_cases() -> list[Case]:
    cases: list[Case] = []
    for name in CONVERSATIONS:
        conversation = json.loads((LOCOMO / f"{name}.json").read_text(encoding="utf-8"))
        sessions = _sessions(conversation)
        before: dict[str, list[str]] = {}
        for number, facts in sessions:
            for speaker, items in sorted(facts.items()):
                if len(items) < 2:
                    before[speaker] = items or before.get(speaker, [])
                    continue
                rng = random.Random(f"{name}:{number}:{speaker}")
                cases.append(_absorb(f"{name}-s{number}-{speaker}-absorb", speaker, items, rng))
                earlier = before.get(speaker, [])
                if len(earlier) >= 2:
                    case_id = f"{name}-s{number}-{speaker}-rewrite"
                    cases.append(_rewrite(case_id, speaker, earlier, items, rng))
                before[speaker] = items
    return cases


def _absorb(case_id: str, speaker: str, items: list[str], rng: random.Random) -> Case:
    absorbed = [(f"{case_id}-o{i}", text) for i, text in enumerate(items)]
    drop = rng.sample(range(len(items)), k=min(rng.choice([0, 1, 2]), len(items) - 1))
    kept = [text for i, text in enumerate(items) if i not in drop]
    return Case(
        id=case_id,
        kind="absorb",
        previous=None,
        absorbed=absorbed,
        text=" ".join(_restate(kept, speaker, rng)),
        unstated=[absorbed[i][0] for i in sorted(drop)],
        dropped=[],
    )


def _rewrite(
    case_id: str, speaker: str, earlier: list[str], items: list[str], rng: random.Random
) -> Case:
    previous = " ".join(s if s.endswith((".", "!", "?")) else s + "." for s in earlier)
    drop = rng.sample(range(len(earlier)), k=min(rng.choice([0, 1, 2]), len(earlier) - 1))
    kept = [s for i, s in enumerate(earlier) if i not in drop]
    absorbed = [(f"{case_id}-o{i}", text) for i, text in enumerate(items)]
    text = " ".join(_restate(kept + items, speaker, rng))
    dropped = [s if s.endswith((".", "!", "?")) else s + "." for i, s in enumerate(earlier)]
    return Case(
        id=case_id,
        kind="rewrite",
        previous=previous,
        absorbed=absorbed,
        text=text,
        unstated=[],
        dropped=[dropped[i] for i in sorted(drop)],
    )


def load_cases(path: Path = DATA) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        raw["absorbed"] = [tuple(pair) for pair in raw["absorbed"]]
        cases.append(Case(**raw))
    return cases


def score(cases: list[Case]) -> dict[str, dict[str, float]]:
    """Precision and recall of the dropped facts (unstated observations and dropped
    sentences together), per kind and overall, and the share of exactly right cases."""
    tallies: dict[str, list[int]] = {}
    for case in cases:
        found = consolidation_fidelity(
            previous=case.previous, text=case.text, absorbed=case.absorbed
        )
        predicted = set(found.unstated_observation_ids) | set(found.dropped_sentences)
        labelled = set(case.unstated) | set(case.dropped)
        for kind in (case.kind, case.id.split("-s")[0], "all"):
            tally = tallies.setdefault(kind, [0, 0, 0, 0, 0])  # tp, fp, fn, exact, cases
            tally[0] += len(predicted & labelled)
            tally[1] += len(predicted - labelled)
            tally[2] += len(labelled - predicted)
            tally[3] += predicted == labelled
            tally[4] += 1
    out = {}
    for kind, (tp, fp, fn, exact, n) in tallies.items():
        out[kind] = {
            "cases": n,
            "dropped": tp + fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "exact": exact / n,
        }
    return out


def run() -> None:
    cases = load_cases()
    rows = [
        [
            kind,
            r["cases"],
            r["dropped"],
            f"{r['precision']:.3f}",
            f"{r['recall']:.3f}",
            f"{r['exact']:.3f}",
        ]
        for kind, r in sorted(score(cases).items(), key=lambda kv: kv[0] == "all")
    ]
    print_table(
        f"Consolidation fidelity on {len(cases)} labelled versions ({DATA.name})",
        ["kind", "cases", "dropped facts", "precision", "recall", "exactly right"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity")
    parser.add_argument("--build", action="store_true", help="rebuild the labelled set")
    if parser.parse_args().build:
        cases = build_cases()
        DATA.write_text(
            "".join(json.dumps(c.__dict__, ensure_ascii=False) + "\n" for c in cases),
            encoding="utf-8",
        )
        print(f"wrote {len(cases)} cases to {DATA}")
    run()


if __name__ == "__main__":
    main()
