"""The UI's forms: shape and bounds only; the domain services enforce the rules and their
errors are placed next to the field they name (`common.form_errors`)."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from streams.core.documents import MAX_CONTENT_CHARS
from streams.drafts.check_kinds import EXPECTATIONS_BY_KIND
from streams.memory.consolidation import MAX_CONSOLIDATION_CHARS
from streams.memory.scopes import MAX_OBSERVATIONS_RANGE, MAX_WORDS_RANGE, THRESHOLD_RANGE
from streams.prompts import MAX_TEMPLATE_CHARS

SCOPE_TYPES = [("", "Any type"), ("individual", "Individual"), ("group", "Group")]
SCOPE_TYPES += [("collective", "Collective"), ("shard", "Shard")]
SORTS = [("newest", "Newest first"), ("oldest", "Oldest first")]
TEXT_TARGETS = [("names", "names and ids"), ("consolidation", "consolidation text")]
STATUSES = [
    ("all", "Any status"),
    ("pending", "Pending"),
    ("consolidated", "Consolidated"),
    ("in_review", "In review"),
    ("candidate", "Candidate"),
    ("rejected", "Rejected"),
]
PRIVACY = [("", "Private or not"), ("yes", "Private only"), ("no", "Not private")]
JOB_STATUSES = [("", "Any status"), ("queued", "Queued"), ("running", "Running")]
JOB_STATUSES += [("succeeded", "Succeeded"), ("failed", "Failed")]


class TextField(forms.CharField):
    """A multi-line text: browsers post CRLF line ends; we store LF, so versions diff cleanly."""

    def to_python(self, value: object) -> str | None:
        text = super().to_python(value)
        return None if text is None else text.replace("\r\n", "\n").replace("\r", "\n")


class ScopeFilterForm(forms.Form):
    agent = forms.CharField(max_length=128, required=False)
    type = forms.ChoiceField(choices=SCOPE_TYPES, required=False)
    user = forms.CharField(max_length=128, required=False, label="User id")
    group = forms.CharField(max_length=128, required=False, label="Group id")
    shard = forms.CharField(max_length=128, required=False, label="Shard name")
    q = forms.CharField(max_length=200, required=False, label="Text")
    within = forms.ChoiceField(choices=TEXT_TARGETS, required=False, label="Text in")
    sort = forms.ChoiceField(choices=SORTS, required=False)


class ObservationFilterForm(forms.Form):
    status = forms.ChoiceField(choices=STATUSES, required=False)
    private = forms.ChoiceField(choices=PRIVACY, required=False)
    deleted = forms.BooleanField(required=False, label="Include deleted")
    superseded = forms.BooleanField(required=False, label="Include superseded")
    text = forms.CharField(max_length=200, required=False)
    unused_days = forms.IntegerField(min_value=1, max_value=3650, required=False)


class ObservationForm(forms.Form):
    content = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=MAX_CONTENT_CHARS
    )
    private = forms.BooleanField(required=False, help_text="Private observations never propagate.")


class ConsolidationEditForm(forms.Form):
    text = TextField(
        widget=forms.Textarea(attrs={"rows": 12}),
        max_length=MAX_CONSOLIDATION_CHARS,
        required=False,
        label="Consolidation",
    )
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)


class ScopeSettingsForm(forms.Form):
    is_active = forms.BooleanField(required=False, label="Active")
    consolidation_threshold = forms.IntegerField(
        min_value=THRESHOLD_RANGE[0], max_value=THRESHOLD_RANGE[1], label="Consolidate after"
    )
    consolidation_max_words = forms.IntegerField(
        min_value=MAX_WORDS_RANGE[0], max_value=MAX_WORDS_RANGE[1], label="Word limit"
    )
    max_observations = forms.IntegerField(
        required=False,
        min_value=MAX_OBSERVATIONS_RANGE[0],
        max_value=MAX_OBSERVATIONS_RANGE[1],
        label="Keep at most (observations)",
        help_text="Empty: no cap. Beyond it the oldest consolidated observations are purged; "
        "pending, pinned and in-review ones never.",
    )
    consolidate_after_days = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=3650,
        label="Consolidate by age (days)",
        help_text="Pending observations older than this are consolidated below the "
        "threshold. Empty: the scope type's default; 0: never by age.",
    )
    review_mode = forms.ChoiceField(
        choices=[
            ("off", "Off: only flagged text waits"),
            ("propagated", "Propagated copies wait for review"),
            ("all", "Everything new waits (but an operator's own adds)"),
        ],
        label="Review",
        required=False,
    )


class PromptForm(forms.Form):
    text = TextField(
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
        max_length=MAX_TEMPLATE_CHARS,
        label="Template",
    )
    expected_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)


class DryRunForm(forms.Form):
    text = TextField(widget=forms.HiddenInput, max_length=MAX_TEMPLATE_CHARS)
    scope = forms.CharField(max_length=24, required=False, label="Scope id")
    user_name = forms.CharField(max_length=128, required=False, initial="User")
    session = forms.CharField(max_length=128, required=False, label="A recent session")
    conversation = TextField(
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=20_000,
        required=False,
        help_text='One message per line, "user: ..." or "assistant: ...".',
    )
    # Two models side by side: the draft with the model in effect and with this one.
    compare_model = forms.CharField(max_length=100, required=False, label="Compare two models")


EXPECTATIONS = [("", "(none)"), ("lands_in", "an observation lands in (scope label)")]
EXPECTATIONS += [
    ("contains", "some observation contains"),
    ("not_contains", "no observation contains"),
]
EXPECTATIONS += [("nothing", "nothing is extracted")]


class CheckForm(forms.Form):
    """A prompt check saved from the dry-run input (extraction) or typed observations
    (consolidation, propagation): a name and up to two expectations of its kind."""

    check_name = forms.CharField(max_length=120, label="Check name")
    expect_1 = forms.ChoiceField(choices=EXPECTATIONS[1:], label="Expect")
    value_1 = forms.CharField(max_length=200, required=False, label="Value")
    expect_2 = forms.ChoiceField(choices=EXPECTATIONS, required=False, label="And expect")
    value_2 = forms.CharField(max_length=200, required=False, label="Value")

    def __init__(self, *args: Any, kind: str = "extraction", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kind != "extraction":
            choices = list(EXPECTATIONS_BY_KIND[kind].items())
            cast(forms.ChoiceField, self.fields["expect_1"]).choices = choices
            cast(forms.ChoiceField, self.fields["expect_2"]).choices = [("", "(none)"), *choices]


class JobFilterForm(forms.Form):
    status = forms.ChoiceField(choices=JOB_STATUSES, required=False)
    agent = forms.CharField(max_length=128, required=False)


class SearchForm(forms.Form):
    agent = forms.CharField(max_length=128)
    user = forms.CharField(max_length=128, required=False, label="User id")
    user_name = forms.CharField(max_length=128, required=False)
    groups = forms.CharField(
        max_length=2000,
        required=False,
        help_text='Comma-separated group ids, optionally "id=Name".',
    )
    message = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=4000)
