"""The offline provider: deterministic rules that make a sensible demo without a model.

Driven through `complete`, as the domain calls it, and read back the way the domain
parses the answer (JSON for extraction and propagation, prose for consolidation).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from streams.llm.offline import OFFLINE_MODEL, OfflineProvider
from streams.llm.port import (
    ConsolidationContext,
    ConversationLine,
    DatedObservation,
    ExtractionContext,
    LLMError,
    LLMRequest,
    PropagationContext,
    ShardGuidance,
)


@pytest.fixture(autouse=True)
def memory_db() -> str:
    """Overrides the suite's per-test database: nothing here touches the store, so these
    tests neither wait for the embedded server nor create databases."""
    return ""


FEEDBACK = ShardGuidance(
    "product_feedback", "Extract product feedback, bug reports and feature requests."
)


def extraction_context(*user_texts: str, **overrides: object) -> ExtractionContext:
    values: dict[str, object] = {
        "lines": [ConversationLine("user", "Gene", text) for text in user_texts],
        "user_name": "Gene",
        "group_names": ["Eden Team", "Platform"],
        "shards": [FEEDBACK],
        "consolidations": {},
    }
    values.update(overrides)
    return ExtractionContext(**values)  # type: ignore[arg-type]


def extract(context: ExtractionContext) -> list[tuple[str, str]]:
    request = LLMRequest("extraction", "(prompt unused offline)", context, True, "fast")
    payload = json.loads(OfflineProvider().complete(request).text)
    return [(item["content"], item["scope"]) for item in payload["observations"]]


def consolidate(current: str | None, *observations: str, max_words: int = 200) -> str:
    start = datetime(2024, 5, 1, tzinfo=UTC)
    dated = [
        DatedObservation(text, start + timedelta(hours=i)) for i, text in enumerate(observations)
    ]
    context = ConsolidationContext("individual memory of Gene", current, dated, max_words)
    return OfflineProvider().complete(LLMRequest("consolidation", "", context, False, "slow")).text


def propagate(observations: list[str], targets: list[str], source: str) -> list[tuple[str, str]]:
    context = PropagationContext(observations, targets, source)
    result = OfflineProvider().complete(LLMRequest("propagation", "", context, True, "fast"))
    return [(item["content"], item["scope"]) for item in json.loads(result.text)["observations"]]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # preferences, instructions, corrections and plans: about this person
        ("I prefer short answers.", [("Gene prefers short answers.", "individual")]),
        (
            "I really don't like long meetings.",
            [("Gene really doesn't like long meetings.", "individual")],
        ),
        ("My favourite editor is Vim.", [("Gene's favourite editor is Vim.", "individual")]),
        (
            "Please always answer in French.",
            [("Gene asks to always answer in French.", "individual")],
        ),
        ("Don't use emojis with me.", [("Gene asks not to use emojis with them.", "individual")]),
        ("Call me G.", [("Gene wants to be called G.", "individual")]),
        (
            "Please call me by my first name.",
            [("Gene wants to be called by their first name.", "individual")],
        ),
        ("Actually, I prefer tea.", [("Gene now prefers tea.", "individual")]),
        (
            "No, it's Berlin, not Munich.",
            [("Gene corrected: No, it's Berlin, not Munich.", "individual")],
        ),
        (
            "I'm going to Lisbon next month.",
            [("Gene is going to Lisbon next month.", "individual")],
        ),
        (
            "I will send the report on Friday.",
            [("Gene will send the report on Friday.", "individual")],
        ),
        ("I am a teacher.", [("Gene is a teacher.", "individual")]),
        # shared facts: the group named, or the first group for "our team"
        (
            "Our team is migrating to Postgres.",
            [("Eden Team is migrating to Postgres.", "group:Eden Team")],
        ),
        ("Platform deploys on Fridays.", [("Platform deploys on Fridays.", "group:Platform")]),
        (
            "We all should write tests before merging.",
            [("We all should write tests before merging.", "collective")],
        ),
        (
            "Everyone benefits from short release notes.",
            [("Everyone benefits from short release notes.", "collective")],
        ),
        # a shard's guidance asks for it
        (
            "The export button crashes, it's a bug.",
            [("The export button crashes, it's a bug.", "shard:product_feedback")],
        ),
        (
            "I'd love a dark mode feature.",
            [("Gene would love a dark mode feature.", "shard:product_feedback")],
        ),
        # nothing worth keeping
        ("hi, thanks!", []),
        ("Ok. Great, thanks for the help!", []),
        ("Can you help me with my code?", []),
        ("What is the capital of France?", []),
        ("The weather is nice today.", []),
    ],
)
def test_extraction_examples(said: str, expected: list[tuple[str, str]]) -> None:
    assert extract(extraction_context(said)) == expected


def test_we_use_goes_to_the_first_group_and_names_it() -> None:
    assert extract(extraction_context("We use Jira for planning.")) == [
        ("Eden Team uses Jira for planning.", "group:Eden Team")
    ]


def test_team_words_without_groups_stay_individual() -> None:
    context = extraction_context("Our team is migrating to Postgres.", group_names=[])
    assert extract(context) == [("Gene said: Our team is migrating to Postgres.", "individual")]


def test_only_user_lines_are_read() -> None:
    context = extraction_context(
        lines=[
            ConversationLine("assistant", "assistant", "I prefer concise code."),
            ConversationLine("tool", "tool", "I will run the migration."),
            ConversationLine("user", "Gene", "I prefer tabs."),
        ]
    )
    assert extract(context) == [("Gene prefers tabs.", "individual")]


def test_at_most_max_observations_in_conversation_order() -> None:
    drinks = ["tea", "coffee", "juice", "water", "milk", "soda", "kefir"]
    said = " ".join(f"I like {drink}." for drink in drinks)

    assert extract(extraction_context(said)) == [
        (f"Gene likes {drink}.", "individual") for drink in drinks[:5]
    ]
    assert len(extract(extraction_context(said, max_observations=2))) == 2


def test_content_is_cut_at_a_word_boundary_to_max_words() -> None:
    said = "I prefer answers that start with a summary, then the details, then the sources."

    [(content, _)] = extract(extraction_context(said, max_words=8))

    assert content == "Gene prefers answers that start with a summary…"
    assert len(content.split()) == 8


def test_repeats_and_what_the_consolidations_already_say_are_skipped() -> None:
    context = extraction_context(
        "I prefer tea. I prefer tea! I work at Acme. I live in Berlin.",
        consolidations={
            "individual": "Gene works at Acme. Gene likes jazz.",
            "group:Eden Team": "",
        },
    )

    assert extract(context) == [
        ("Gene prefers tea.", "individual"),
        ("Gene lives in Berlin.", "individual"),
    ]


def test_extraction_is_deterministic_and_labelled_offline() -> None:
    context = extraction_context(
        "I prefer tea. Our team ships on Mondays. Everyone should review code.",
        "Actually, I prefer coffee. There's a bug in the export.",
    )
    request = LLMRequest(
        "extraction", "a prompt of forty characters, give or take", context, True, "fast"
    )

    first, second = OfflineProvider().complete(request), OfflineProvider().complete(request)

    assert first.text == second.text
    assert first.model == second.model == OFFLINE_MODEL
    assert first.prompt_tokens == math.ceil(len(request.prompt) / 4)
    assert first.completion_tokens == math.ceil(len(first.text) / 4)
    assert OfflineProvider.name == "offline"
    reworded = LLMRequest("extraction", "an operator's override", context, True, "fast")
    assert OfflineProvider().complete(reworded).text == first.text  # the context decides


def test_a_context_that_does_not_match_the_task_is_an_llm_error() -> None:
    context = PropagationContext([], ["collective"], "group Eden Team")
    with pytest.raises(LLMError, match="cannot answer a consolidation request"):
        OfflineProvider().complete(LLMRequest("consolidation", "", context, False, "slow"))


def test_consolidation_merges_into_prose() -> None:
    assert consolidate(None, "Gene prefers tea", "Gene works at Acme!") == (
        "Gene prefers tea. Gene works at Acme."
    )
    assert consolidate("Gene likes jazz.", "Gene lives in Berlin.") == (
        "Gene likes jazz. Gene lives in Berlin."
    )
    assert consolidate(None) == ""


def test_consolidation_removes_repeats() -> None:
    assert consolidate(
        "Gene prefers tea. Gene likes jazz.", "gene prefers tea", "Gene likes jazz."
    ) == ("Gene prefers tea. Gene likes jazz.")


@pytest.mark.parametrize(
    ("current", "new", "expected"),
    [
        ("Gene lives in Munich.", "Gene lives in Berlin.", "Gene lives in Berlin."),
        ("Gene works at Acme.", "Gene works at Globex.", "Gene works at Globex."),
        (
            "Gene's favourite colour is blue.",
            "Gene's favourite colour is green.",
            "Gene's favourite colour is green.",
        ),
        ("Gene prefers short answers.", "Gene prefers long answers.", "Gene prefers long answers."),
        ("Gene prefers tea.", "Gene now prefers coffee.", "Gene now prefers coffee."),
        ("Eden Team uses Jira.", "Eden Team switched to Linear.", "Eden Team switched to Linear."),
        (
            "Gene said: the release freeze starts Monday.",
            "Gene corrected: the release freeze starts Tuesday.",
            "Gene corrected: the release freeze starts Tuesday.",
        ),
        # different subjects, or several values of a many-valued one: both stay
        (
            "Gene likes jazz.",
            "Gene likes classical music.",
            "Gene likes jazz. Gene likes classical music.",
        ),
        ("Gene prefers tea.", "Eden Team prefers tea.", "Gene prefers tea. Eden Team prefers tea."),
    ],
)
def test_consolidation_newer_wins_on_the_same_subject(
    current: str, new: str, expected: str
) -> None:
    assert consolidate(current, new) == expected


def test_newer_wins_among_the_new_observations_too() -> None:
    assert consolidate(None, "Gene lives in Rome.", "Gene likes jazz.", "Gene lives in Oslo.") == (
        "Gene likes jazz. Gene lives in Oslo."
    )


def test_consolidation_drops_the_oldest_sentences_to_fit_the_word_limit() -> None:
    text = consolidate(
        "Gene likes jazz. Gene works at Acme.",
        "Gene lives in Berlin.",
        "Gene has two cats.",
        max_words=9,
    )

    assert text == "Gene lives in Berlin. Gene has two cats."
    assert len(text.split()) <= 9


def test_a_single_sentence_over_the_limit_is_cut() -> None:
    text = consolidate(
        None, "Gene prefers answers with a summary first and the details after it.", max_words=5
    )

    assert text == "Gene prefers answers with a."
    assert len(text.split()) == 5


def test_propagation_copies_shared_facts_to_each_group_and_drops_personal_ones() -> None:
    # Contact details are left to the propagation guard (streams.guard.detectors), which blocks
    # them whatever any provider answers: see tests/streams/guard/test_review.py.
    observations = [
        "Gene prefers tea.",
        "Gene said: Our team is migrating to Postgres.",
        "Gene works at Acme with the team.",
        "I think the project is late.",
        "The team lead is in hospital.",
        "The sky is blue.",
        "Everyone should write tests first.",
    ]

    assert propagate(observations, ["Eden Team", "Platform"], "individual memory of Gene") == [
        ("Our team is migrating to Postgres.", "group:Eden Team"),
        ("Our team is migrating to Postgres.", "group:Platform"),
        ("Everyone should write tests first.", "group:Eden Team"),
        ("Everyone should write tests first.", "group:Platform"),
    ]


def test_propagation_to_the_collective_and_to_the_group_a_fact_names() -> None:
    observations = [
        "Eden Team ships on Mondays with the project board.",
        "Users want faster exports.",
    ]

    assert propagate(observations, ["collective"], "group Eden Team") == [
        ("Eden Team ships on Mondays with the project board.", "collective"),
        ("Users want faster exports.", "collective"),
    ]
    assert propagate(observations[:1], ["Eden Team", "Platform"], "individual memory of Gene") == [
        ("Eden Team ships on Mondays with the project board.", "group:Eden Team")
    ]


def test_propagation_accepts_ready_group_labels_and_knows_the_person_by_name() -> None:
    observations = [
        "Gene Hunt works with the team on billing.",
        "Hunt reviews every release of the project.",
        "The team releases on Tuesdays.",
    ]

    assert propagate(
        observations, ["group:Eden Team", "group:Platform"], "individual memory of Gene Hunt"
    ) == [
        ("The team releases on Tuesdays.", "group:Eden Team"),
        ("The team releases on Tuesdays.", "group:Platform"),
    ]
    assert propagate(observations[2:], ["group:Platform"], "memory of the group Platform") == [
        ("The team releases on Tuesdays.", "group:Platform")
    ]
