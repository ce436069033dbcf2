"""Large request bodies take turns for a host-wide slot; small ones never wait."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from memory_admin.web.large_requests import host_slot
from tests.api.conftest import API, assert_error

SESSION = f"{API}/agents/agent-1/sessions/s1"


def ingest(client, content: str, n: int = 1, *, threaded: bool = True):
    """`threaded`: as from a worker with threads (gunicorn's gthread), where a wait is safe."""
    body = {
        "user_id": "u1",
        "messages": [{"id": f"m{n}", "role": "user", "content": content}],
    }
    return client.post(
        f"{SESSION}/messages",
        body,
        content_type="application/json",
        **{"wsgi.multithread": threaded},
    )


def gate(settings, tmp_path, *, wait: int) -> None:
    settings.MEMORY_DATA_DIR = tmp_path  # this test's own slots, whatever else runs
    settings.MEMORY_LARGE_REQUEST_BYTES = 1_000
    settings.MEMORY_LARGE_REQUEST_SLOTS = 1
    settings.MEMORY_LARGE_REQUEST_WAIT_SECONDS = wait


def test_a_large_body_finding_no_slot_is_503_busy_and_a_small_one_passes(api, settings, tmp_path):
    gate(settings, tmp_path, wait=0)
    with host_slot(tmp_path / "slots", 1, 0) as taken:
        assert taken
        response = ingest(api, "x" * 2_000)
        error = assert_error(response, 503, "busy")
        assert "large requests" in error["message"]
        assert int(response["Retry-After"]) >= 1
        assert ingest(api, "short and sweet", n=2).status_code == 202
    assert ingest(api, "x" * 2_000).status_code == 202  # the slot is free again


def test_a_large_body_waits_for_the_slot_then_is_served(api, settings, tmp_path):
    gate(settings, tmp_path, wait=10)
    released = threading.Event()

    def hold() -> None:
        with host_slot(tmp_path / "slots", 1, 0):
            time.sleep(0.5)
        released.set()

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.1)
    response = ingest(api, "y" * 2_000)
    assert released.is_set()  # it was answered only after the holder let go
    assert response.status_code == 202
    holder.join()


def test_a_killed_holder_never_keeps_its_slot(tmp_path):
    directory = tmp_path / "slots"
    with host_slot(directory, 1, 0):
        pass  # creates the slot files
    code = (
        "import fcntl, os, sys, time; "
        f"fd = os.open({str(directory / 'large-request-0.lock')!r}, os.O_RDWR); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with host_slot(directory, 1, 0) as taken:
            assert not taken
        child.kill()
        child.wait(timeout=10)
        with host_slot(directory, 1, 5) as taken:
            assert taken
    finally:
        child.kill()


def test_slots_zero_turns_the_gate_off(api, settings, tmp_path):
    gate(settings, tmp_path, wait=0)
    settings.MEMORY_LARGE_REQUEST_SLOTS = 0
    with host_slot(tmp_path / "slots", 1, 0):
        assert ingest(api, "z" * 2_000).status_code == 202


def test_a_ui_form_finding_no_slot_gets_a_page_not_json(admin_client, settings, tmp_path):
    gate(settings, tmp_path, wait=0)
    with host_slot(tmp_path / "slots", 1, 0):
        response = admin_client.post(
            "/agents/", {"name": "x" * 2_000}, **{"wsgi.multithread": True}
        )
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert b"busy with other large requests" in response.content


def test_a_large_job_write_holds_a_slot_and_goes_ahead_when_none_frees(settings, tmp_path):
    from memory_admin.web.large_requests import large_job_slot

    gate(settings, tmp_path, wait=0)
    with large_job_slot(5_000), host_slot(tmp_path / "slots", 1, 0) as taken:
        assert not taken  # the job holds the one slot
    with large_job_slot(10), host_slot(tmp_path / "slots", 1, 0) as taken:
        assert taken  # small work takes none
    with host_slot(tmp_path / "slots", 1, 0), large_job_slot(5_000):
        pass  # busy: it went ahead without a slot rather than fail the job


def test_formation_commits_inside_the_large_work_gate_with_its_messages_size(store, fake_openai):
    from memory_admin.jobs.tasks import formation_settings
    from streams.memory import large_work
    from streams.memory.formation import formation_run
    from tests.streams.memory.test_formation import ingest as ingest_messages
    from tests.task_mode import run_job

    sizes: list[int] = []
    inside: list[int] = []

    class Recording:
        def __init__(self, size: int) -> None:
            sizes.append(size)

        def __enter__(self) -> None:
            inside.append(store.observations.collection.count_documents({"agent_id": "a1"}))

        def __exit__(self, *exc: object) -> None:
            inside.append(store.observations.collection.count_documents({"agent_id": "a1"}))

    item = {"content": "Gene likes tea.", "scope": "individual"}
    fake_openai.reply_json({"observations": [item]})
    result = ingest_messages(store, 4, content="I like tea. " * 100)
    large_work.register_large_work_gate(Recording)
    try:
        run_job(
            store=store,
            job_id=result.formation_job.id,
            work=lambda run: formation_run(store=store, run=run, settings=formation_settings()),
        )
    finally:
        from memory_admin.web.large_requests import large_job_slot

        large_work.register_large_work_gate(large_job_slot)
    assert sizes == [4 * len("I like tea. " * 100)]
    assert inside == [0, 1]  # the commit ran inside the gate


def test_a_single_threaded_worker_never_waits_for_a_slot(api, settings, tmp_path):
    """Waiting would hold back every request queued on that worker: it goes ahead."""
    gate(settings, tmp_path, wait=30)
    with host_slot(tmp_path / "slots", 1, 0):
        # The slot stays taken: a waiting request could only have ended in 503 busy.
        assert ingest(api, "x" * 2_000, threaded=False).status_code == 202
