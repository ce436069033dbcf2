"""Rule-based extraction for the offline provider: what a user said that is worth keeping.

Only the user's own lines are read, sentence by sentence. A sentence is kept when it is a
preference, an instruction, a correction, a plan or a first-person fact, or when it is
about a group, about everyone, or about a shard's subject; questions, requests to the
assistant and pleasantries are not. Kept sentences are rewritten in the third person with
the user's name where that is a simple substitution ("I prefer tea" becomes "Gene prefers
tea"), and quoted otherwise ("Gene said: ..."), so the memory reads the same whoever
reads it later.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from streams.llm.offline_text import (
    capitalise,
    clean,
    close_sentence,
    contains,
    normalise,
    significant_words,
    split_sentences,
    stem,
    truncate_words,
    word_set,
)
from streams.llm.port import ExtractionContext, ShardGuidance

_I = re.IGNORECASE
PREFERENCE = re.compile(
    r"\bI\s+(?:(?:really|also|still|much|just|truly|absolutely|definitely|do|don't|do not"
    r"|no longer|never)\s+)*(?:like|love|prefer|hate|enjoy|dislike|adore|can't stand)\b"
    r"|\bI'd\s+(?:rather|prefer)\b|\bmy\s+favou?rite\b",
    _I,
)
INSTRUCTION = re.compile(
    r"\bplease\s+(?:always|never|don't|do not|stop|avoid|remember|keep)\b|\bcall me\b"
    r"|^(?:please\s+)?(?:don't|do not|never|always|stop)\b",
    _I,
)
CORRECTION = re.compile(
    r"\bactually\b|\bcorrection\b|\bI meant\b|^no,\s*(?:it's|it is|I|my|that|the)\b", _I
)
PLAN = re.compile(
    r"\bI'?m\s+going\s+to\b|\bI am going to\b|\bI\s+plan\b|\bI'm\s+planning\b|\bI\s+will\b"
    r"|\bI'll\b|\bnext\s+(?:week|month|year|quarter|sprint)\b",
    _I,
)
FIRST_PERSON_FACT = re.compile(
    r"^(?:I\s+(?:am|was|work|live|have|use|need|want|own|study|speak|teach|manage|lead"
    r"|moved|started|joined|run|drive|drink|eat)\b"
    r"|I'm\s+(?:a|an|the|from|based|in|at|allergic|vegan|vegetarian|\w+ing)\b"
    r"|I've\b|my\s+\w+\s+\w+)",
    _I,
)
REQUEST = re.compile(
    r"^(?:can|could|would|will)\s+you\b|\b(?:help me|tell me|show me|explain)\b"
    r"|\bI have a question\b|\bI (?:want|need) to know\b",
    _I,
)
GROUP_WORDS = re.compile(
    r"\b(?:our|the|my)\s+(?:team|squad|project|department)\b"
    r"|\bwe(?:'re|\s+are)\s+(?:migrating|using|planning|moving|switching|building|adopting)\b"
    r"|\bwe\s+(?:use|migrated|switched|deploy|ship|release)\b",
    _I,
)
COLLECTIVE_WORDS = re.compile(r"\bwe all\b|\beveryone\b|\beverybody\b|\ball users\b", _I)
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself)\b", _I)
_LEADING_FILLER = re.compile(
    r"^(?:hi|hello|hey|ok|okay|oh|so|well|yes|yeah|great|cool|sure|thanks|thank you)"
    r"\s*[,!.:;-]+\s*",
    _I,
)
_CHITCHAT = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|thx|bye|goodbye|cheers|good (?:morning|night)"
    r"|great|cool|nice|awesome|sure|ok|okay|lol|see you)\b",
    _I,
)
_DISCOURSE = re.compile(r"^(?:actually|correction|sorry|oh|wait)\b[\s,:;!.-]*", _I)
_GUIDANCE_STOPWORDS = word_set(
    """extract capture record note notes remember keep track observation observations anything
    something everything mention mentions mentioned related relevant user users information
    info detail details thing things item items include includes including e.g message
    messages conversation conversations agent assistant report reports request requests
    want wants like such other only each every give given shard guidance"""
)
_ADVERBS = word_set(
    "really also always usually often still never just mostly generally normally now "
    "currently sometimes rarely actually no longer"
)
_SAME_FORM = word_set(
    "was can could will would should must might may can't cannot won't wouldn't shouldn't "
    "couldn't didn't did had wasn't"
)
_IRREGULAR = {
    "am": "is",
    "have": "has",
    "haven't": "hasn't",
    "do": "does",
    "don't": "doesn't",
    "go": "goes",
}
_PRESENT = word_set(
    """like love prefer hate enjoy dislike adore want need work live use plan study teach run
    own speak play drink eat read write travel know think feel manage lead build hope expect
    intend try keep avoid mean drive commute cook code prefer"""
)
_WOULD = word_set("like love prefer rather")
_CONTRACTIONS = {"i'm": "is", "i've": "has", "i'll": "will"}
_OBJECT_PRONOUNS = [
    (re.compile(r"\bI am\b", _I), "they are"),
    (re.compile(r"\bI was\b", _I), "they were"),
    (re.compile(r"\bI'm\b", _I), "they're"),
    (re.compile(r"\bI've\b", _I), "they've"),
    (re.compile(r"\bI'll\b", _I), "they'll"),
    (re.compile(r"\bI'd\b", _I), "they'd"),
    (re.compile(r"\bI\b", _I), "they"),
    (re.compile(r"\bmyself\b", _I), "themself"),
    (re.compile(r"\bmine\b", _I), "theirs"),
    (re.compile(r"\bmy\b", _I), "their"),
    (re.compile(r"\bme\b", _I), "them"),
]


def extract_observations(context: ExtractionContext) -> list[dict[str, Any]]:
    """The observations of one formation, in conversation order, at most `max_observations`."""
    default_name = clean(context.user_name) or "The user"
    known = [text for text in context.consolidations.values() if text]
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    for line in context.lines:
        if line.role != "user":
            continue
        # A line with its speaker's id (a formation) is about that speaker: their name,
        # their scope `individual:<id>`, and `about` names them for any other scope.
        name = (clean(line.speaker) or default_name) if line.user_id else default_name
        for raw in split_sentences(line.content):
            if len(found) >= max(context.max_observations, 0):
                return found
            sentence = _strip_filler(raw)
            scope = _worth_keeping(sentence, context)
            if scope is None:
                continue
            label = (
                f"individual:{line.user_id}" if scope == "individual" and line.user_id else scope
            )
            words = context.limits_for(label)[1]  # the target's word limit
            content = truncate_words(_rewrite(sentence, name, scope), words)
            key = normalise(content)
            if not key or key in seen:
                continue
            if any(contains(text, content) or contains(text, sentence) for text in known):
                continue
            seen.add(key)
            cites = {"sources": [line.message_id]} if line.message_id else {}
            until = validity_end(sentence, said_at=line.created_at)
            if until is not None:
                cites["expires_at"] = until.isoformat()  # type: ignore[assignment]
            if line.user_id:
                if scope == "individual":
                    scope = f"individual:{line.user_id}"
                found.append({"content": content, "scope": scope, "about": [line.user_id], **cites})
            else:
                found.append({"content": content, "scope": scope, **cites})
    return found


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_UNTIL = re.compile(
    r"\b(?:until|till|through)\s+(?:next\s+)?(" + "|".join(_WEEKDAYS) + r"|tomorrow|tonight)\b"
    r"|\b(?:this|for the)\s+(week|weekend)\b",
    _I,
)


def validity_end(sentence: str, *, said_at: datetime | None) -> datetime | None:
    """When a sentence says how long it holds ("until Friday", "till tomorrow", "this
    week"): the end of that day (UTC), counted from when it was said; else None."""
    found = _UNTIL.search(sentence)
    if found is None:
        return None
    base = (said_at or datetime.now(UTC)).astimezone(UTC)
    word = (found.group(1) or found.group(2)).lower()
    if word == "tonight":
        days = 0
    elif word == "tomorrow":
        days = 1
    elif word in ("week", "weekend"):
        days = 6 - base.weekday()  # to Sunday
    else:
        days = (_WEEKDAYS.index(word) - base.weekday()) % 7 or 7
    day = (base + timedelta(days=days)).replace(hour=23, minute=59, second=59, microsecond=0)
    return day


def _strip_filler(sentence: str) -> str:
    """Drop a leading "Ok," or "Thanks!" so that what follows is judged on its own."""
    previous = None
    while previous != sentence:
        previous, sentence = sentence, _LEADING_FILLER.sub("", sentence, count=1)
    return sentence


def _worth_keeping(sentence: str, context: ExtractionContext) -> str | None:
    """The scope a kept sentence goes to, or None for questions, requests and chit-chat."""
    if len(sentence.split()) < 3 or sentence.endswith("?") or _CHITCHAT.match(sentence):
        return None
    signals = (PREFERENCE, INSTRUCTION, CORRECTION, PLAN, FIRST_PERSON_FACT)
    shared = (GROUP_WORDS, COLLECTIVE_WORDS)
    signalled = any(pattern.search(sentence) for pattern in (*signals, *shared))
    if REQUEST.search(sentence) and not INSTRUCTION.search(sentence):
        return None
    scope = route(sentence, context)
    return scope if signalled or scope != "individual" else None


def route(sentence: str, context: ExtractionContext) -> str:
    """Group before collective before shard before individual (the default when unsure)."""
    for group in context.group_names:
        if group and re.search(rf"(?<!\w){re.escape(group)}(?!\w)", sentence, _I):
            return f"group:{group}"
    if GROUP_WORDS.search(sentence) and context.group_names:
        return f"group:{context.group_names[0]}"
    if COLLECTIVE_WORDS.search(sentence):
        return "collective"
    shard = match_shard(sentence, context.shards)
    return f"shard:{shard}" if shard else "individual"


def shard_terms(shard: ShardGuidance) -> set[str]:
    """Stems of the shard's name and of the content words of its guidance."""
    name_words = [w for w in re.split(r"[^a-z0-9]+", shard.name.lower()) if len(w) >= 3]
    guidance = significant_words(shard.guidance, extra_stopwords=_GUIDANCE_STOPWORDS)
    return {stem(w) for w in [*name_words, *guidance] if len(w) >= 3}


def match_shard(sentence: str, shards: list[ShardGuidance]) -> str | None:
    """The shard sharing the most content words with the sentence; the first one on a tie."""
    sentence_stems = {stem(w) for w in significant_words(sentence)}
    best, best_overlap = None, 0
    for shard in shards:
        overlap = len(sentence_stems & shard_terms(shard))
        if overlap > best_overlap:
            best, best_overlap = shard.name, overlap
    return best


def _rewrite(sentence: str, name: str, scope: str) -> str:
    """Third person where it is a plain substitution; otherwise the words quoted as said."""
    if scope.startswith("group:"):
        sentence = _rewrite_group(sentence, scope.removeprefix("group:"))
    is_correction = bool(CORRECTION.search(sentence))
    core = _DISCOURSE.sub("", sentence).strip()
    simple = _third_person(core, name, correction=is_correction) if core else None
    if simple:
        return close_sentence(simple)
    if scope != "individual" and not FIRST_PERSON.search(sentence):
        return close_sentence(capitalise(sentence))
    verb = "corrected" if is_correction else "said"
    return close_sentence(f"{name} {verb}: {capitalise(sentence)}")


def _rewrite_group(sentence: str, group: str) -> str:
    """ "Our team uses Jira" becomes "Eden Team uses Jira": the group's own memory names it."""
    sentence = re.sub(r"^(?:our|the|my) (?:team|squad)\b", group, sentence, flags=_I)
    sentence = re.sub(r"^our (project|product)\b", rf"{group}'s \1", sentence, flags=_I)
    sentence = re.sub(r"^we(?:'re| are)\b", f"{group} is", sentence, flags=_I)
    return re.sub(
        r"^we (\w+)\b", lambda m: f"{group} {_third_person_verb(m[1]) or m[1]}", sentence, flags=_I
    )


def _third_person(core: str, name: str, *, correction: bool) -> str | None:
    """ "I really like X" → "Gene really likes X"; None when no simple rewrite applies."""
    if m := re.match(r"^(?:please\s+)?call me\s+(.+)$", core, _I):
        return f"{name} wants to be called {_pronouns(m[1])}"
    if m := re.match(r"^(?:please\s+)?(?:don't|do not)\s+(.+)$", core, _I):
        return f"{name} asks not to {_pronouns(m[1])}"
    if m := re.match(r"^(?:please\s+)?(always|never)\s+(.+)$", core, _I):
        return f"{name} asks to {m[1].lower()} {_pronouns(m[2])}"
    if m := re.match(r"^my\s+(.+)$", core, _I):
        return f"{name}'s {_pronouns(m[1])}"
    tokens = core.split()
    first = tokens[0].lower()
    if first in _CONTRACTIONS:
        head, rest = [_CONTRACTIONS[first]], tokens[1:]
    elif first == "i'd" and len(tokens) > 1 and tokens[1].lower() in _WOULD:
        head, rest = ["would"], tokens[1:]
    elif first == "i" and len(tokens) > 1:
        index = 1
        adverbs: list[str] = []
        while index < len(tokens) and tokens[index].lower() in _ADVERBS:
            adverbs.append(tokens[index])
            index += 1
        verb = _third_person_verb(tokens[index]) if index < len(tokens) else None
        if verb is None:
            return None
        head, rest = [*adverbs, verb], tokens[index + 1 :]
    else:
        return None
    if correction and not re.search(r"\bnow\b", core, _I):
        at = 1 if head[0] in {"is", "has", "will", "would", "does", "was"} else 0
        head.insert(at, "now")
    return " ".join([name, *head, _pronouns(" ".join(rest))]).strip()


def _third_person_verb(verb: str) -> str | None:
    """The he/she form of a verb that follows "I", or None when it is not a known verb.

    Trailing punctuation ("I agree.") is kept after the conjugated word.
    """
    match = re.match(r"^([a-z']+)(\W*)$", verb.lower())
    if not match:
        return None
    word, tail = match[1], match[2]
    if word in _IRREGULAR:
        return _IRREGULAR[word] + tail
    if word in _SAME_FORM or (word.endswith("ed") and len(word) > 3):
        return word + tail
    if word not in _PRESENT:
        return None
    if word.endswith(("s", "sh", "ch", "x", "z", "o")):
        return f"{word}es{tail}"
    if word.endswith("y") and word[-2:-1] not in set("aeiou"):
        return f"{word[:-1]}ies{tail}"
    return f"{word}s{tail}"


def _pronouns(text: str) -> str:
    """Remaining first-person words become singular "they", which keeps the verbs as they are."""
    for pattern, replacement in _OBJECT_PRONOUNS:
        text = pattern.sub(replacement, text)
    return text
