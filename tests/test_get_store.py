"""`get_store` keeps one `MemoryStore` per client and settings (building one per request
cost a read call 5 to 7% of its web CPU), and never serves one built from other settings."""

from __future__ import annotations

import ast
import inspect
import textwrap

from memory_admin import stores
from memory_admin.stores import STORE_SETTINGS, get_store
from streams.core.instruction_policy import InstructionPolicy


def test_the_same_settings_get_the_same_store(memory_db: str) -> None:
    assert get_store() is get_store()
    assert get_store().name == memory_db


def test_a_changed_setting_gets_a_store_built_with_it(memory_db: str, settings) -> None:
    first = get_store()
    settings.MEMORY_INSTRUCTION_POLICY = "withhold"
    second = get_store()
    assert second is not first
    assert second.instruction_policy == InstructionPolicy.parse("withhold")
    settings.MEMORY_LLM_PRICES = {"m": [1.0, 2.0]}  # unhashable values are keyed too
    assert get_store() is not second and get_store().prices == {"m": [1.0, 2.0]}
    assert get_store() is get_store()


def test_a_new_client_gets_a_new_store(memory_db: str, monkeypatch) -> None:
    first = get_store()
    fresh = type(first.client)(first.client.address[0], first.client.address[1], tz_aware=True)
    try:
        monkeypatch.setattr(stores, "get_client", lambda uri, **kwargs: fresh)
        assert get_store() is not first and get_store().client is fresh
    finally:
        fresh.close()


def test_the_store_is_built_from_the_keyed_settings_only() -> None:
    """A setting read beside the key would leave kept stores built with its old value."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(stores._built_store)))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "settings" not in names, "_built_store reads settings directly"
    keyed = {
        n.slice.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
    }
    assert keyed <= set(STORE_SETTINGS) and read.isdisjoint(STORE_SETTINGS)
