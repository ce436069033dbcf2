"""Stemming from many threads at once: gunicorn's threads index and search side by side.

A Snowball stemmer keeps the word it is working on in the stemmer itself; one shared by
the threads of a web process mixed their words (`benchmarks concurrency`: a batch add
answered 500 with an IndexError inside the stemmer at 16 clients; a stem computed from
another thread's word is worse, being silent, and the cache keeps it).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest
import snowballstemmer

from streams.search import text

WORDS = ("running", "generously", "happiness", "organizations", "hopefully", "caresses")


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Threads handed the GIL every microsecond: an interleaving the web process meets
    now and then under load, here within a few thousand words."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    text.stem.cache_clear()
    try:
        yield
    finally:
        sys.setswitchinterval(interval)
        text.stem.cache_clear()


def test_threads_stemming_at_once_each_get_their_own_words_stem(fast_switching: None) -> None:
    threads_count, per_thread = 8, 3000
    wrong: list[tuple[str, str, str]] = []
    failed: list[BaseException] = []
    start = threading.Barrier(threads_count)

    def stem_many(t: int) -> None:
        reference = snowballstemmer.stemmer("english")  # the thread's own, to compare
        start.wait()
        try:
            for n in range(per_thread):
                # Distinct words per thread and call, so the cache answers none of them.
                word = f"q{t}n{n}{WORDS[(t + n) % len(WORDS)]}"
                got = text.stem(word)
                expected = reference.stemWord(word)
                if got != expected:
                    wrong.append((word, got, expected))
        except BaseException as exc:  # an IndexError inside the stemmer, say
            failed.append(exc)

    workers = [threading.Thread(target=stem_many, args=(t,)) for t in range(threads_count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failed == []
    assert wrong == []
