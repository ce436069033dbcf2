"""The offline provider's "Suggest a change": deterministic rules from the corrections.

It appends (or replaces) one block of rules to the prompt in effect, one rule per kind of
correction it was shown. It quotes only what staff wrote (the reasons) and the targets of
moves, never an observation's or a line's words: removed text stays out of the draft.
"""

from __future__ import annotations

import json

from streams.llm.port import SuggestionContext

BLOCK_HEAD = "Rules learnt from support corrections:"
_MAX_REASONS = 5


def suggest(context: SuggestionContext) -> str:
    """The JSON answer `{"prompt", "why"}` the suggestion request asks for."""
    base = context.template.split("\n\n" + BLOCK_HEAD, 1)[0].rstrip()
    by_what: dict[str, list[str]] = {}
    for e in context.examples:
        by_what.setdefault(e.what, []).append(_plain(e.reason or ""))
    rules = []
    removed = by_what.get("delete", []) + by_what.get("reject", [])
    if removed:
        reasons = [r for r in dict.fromkeys(removed) if r][:_MAX_REASONS]
        why = f" (support said: {'; '.join(reasons)})" if reasons else ""
        rules.append(f"- Record only facts the user states; skip guesses and passing remarks{why}.")
    if "edit" in by_what:
        rules.append("- Write each fact as support corrects it: short, specific, one fact.")
    if "private" in by_what:
        rules.append("- Treat personal details (health, family, contact) as private to the user.")
    targets = sorted({_plain(e.target) for e in context.examples if e.what == "move" and e.target})
    if targets:
        rules.append(f"- File facts like the ones support moved under {', '.join(targets)}.")
    prompt = f"{base}\n\n{BLOCK_HEAD}\n" + "\n".join(rules) if rules else base
    why = f"{len(context.examples)} correction(s): " + ", ".join(
        f"{len(v)} {k}" for k, v in sorted(by_what.items())
    )
    return json.dumps({"prompt": prompt, "why": why})


def _plain(text: str) -> str:
    """A reason as one line without braces (a template's placeholders are in braces)."""
    return " ".join(text.replace("{", "(").replace("}", ")").split())[:160]
