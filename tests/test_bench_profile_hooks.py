"""The profiled worker of `benchmarks single_add` times stages by name: each must exist."""

from __future__ import annotations

import pytest

from benchmarks.profile_hooks import STAGES, stage_target


@pytest.mark.parametrize(("module", "attribute", "stage"), STAGES)
def test_every_profiled_stage_names_a_callable_of_the_tree(
    module: str, attribute: str, stage: str
) -> None:
    owner, name = stage_target(module, attribute)
    assert callable(getattr(owner, name)), stage


def test_a_stage_that_is_gone_is_named_by_the_error() -> None:
    with pytest.raises(AttributeError, match="audit_record"):
        stage_target("streams.memory.add_writes", "audit_record")
