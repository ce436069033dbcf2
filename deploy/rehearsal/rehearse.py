"""The multi-host rehearsal: `make rehearsal` (root; docs/rehearsal.md).

Five hosts in network namespaces: two web hosts (gunicorn with the repo's config, two
workers each) behind nginx, a worker host (a Celery worker and beat), a Redis host and
a store host (the embedded store's server on its own address, with auth). Django's own
tables are in the machine's PostgreSQL (over its Unix socket, which every namespace
shares). Sixteen clients, each its own process, send ingest, single and batch adds,
deletes, context and search through nginx for a bounded time, while the web host, the
worker host, Redis and the store are killed (SIGKILL to the whole host) one at a time and
started again. Then it checks, through the API only, what a caller was promised:

- every acknowledged observation exists exactly once (lost, duplicated);
- how long each fault kept requests failing; which jobs never finished;
- whether any context or search served text after its delete was acknowledged;
- the rate limit across hosts, with Redis up (shared) and down (per process).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from subprocess import Popen

sys.path.insert(1, str(Path(__file__).resolve().parents[2]))  # the app, after this folder

from hosts import GATEWAY, Host, network_down, network_up, sh  # noqa: E402
from report import Api, report, verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
AGENT = "rehearsal"
PG_SOCKET = "/var/run/postgresql"
PG_DB = "memory_rehearsal"
NGINX_PORT = 8080
BASE = f"http://{GATEWAY}:{NGINX_PORT}/api/v1"
LIMIT, BURST = 200, 800  # the rate-limit phase: a minute's allowance, requests sent
KEYS_SCRIPT = """
import json
from memory_admin.accounts.actions import api_key_create
from streams.actions import Actor
keys = {}
for name in NAMES:
    _, raw = api_key_create(actor=Actor.cli(), name=name, agent_ids=AGENTS, create_agents=True)
    keys[name] = raw
print("KEYS " + json.dumps(keys))
"""


def wait_port(host: str, port: int, within: float) -> None:
    import socket

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"{host}:{port} did not open within {within:.0f}s")


def store_host(host: Host, work: Path, env: dict[str, str]) -> str:
    """Provision the store user on a server without auth, then serve with --auth."""
    from memory_admin.runtime.embedded_store import server_argv
    from streams.store.client import provision_root_user

    storage = work / "store"
    storage.mkdir(mode=0o700)
    user, password = "memory_admin", secrets.token_urlsafe(24)
    host.run(
        server_argv(host=host.address, port=27017, storage_path=storage, auth=False),
        env,
        keep=False,
    )
    wait_port(host.address, 27017, 60)
    provision_root_user(
        f"mongodb://{host.address}:27017/?directConnection=true", username=user, password=password
    )
    host.kill()
    host.run(server_argv(host=host.address, port=27017, storage_path=storage, auth=True), env)
    wait_port(host.address, 27017, 60)
    quoted = urllib.parse.quote(password, safe="")
    return f"mongodb://{user}:{quoted}@{host.address}:27017/?directConnection=true"


def nginx_conf(prefix: Path, web: list[Host]) -> Path:
    snippet = ROOT / "deploy" / "nginx" / "memory-admin-proxy.conf"
    temp = "\n".join(
        f"  {n}_temp_path {prefix / n};"
        for n in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    servers = "\n".join(f"    server {h.address}:8000 max_fails=1 fail_timeout=3s;" for h in web)
    conf = prefix / "nginx.conf"
    conf.write_text(f"""user root;
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
{temp}
  upstream memory_admin {{
{servers}
    keepalive 32;
  }}
  server {{
    listen {GATEWAY}:{NGINX_PORT};
    server_name _;
    include {snippet};
  }}
}}
""")
    return conf


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def make_keys(env: dict[str, str], names: list[str]) -> dict[str, str]:
    code = KEYS_SCRIPT.replace("NAMES", repr(names)).replace("AGENTS", repr([AGENT]))
    out = manage(env, "shell", "-c", code)
    line = next(x for x in out.splitlines() if x.startswith("KEYS "))
    return json.loads(line[5:])


def app_env(work: Path, mongodb_uri: str, redis: Host, rate_limit: int) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_", "MEMORY_"))
    }
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    env.update(
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=(work / "secret").read_text(),
        DJANGO_ALLOWED_HOSTS="*",
        DJANGO_STATIC_ROOT=str(work / "static"),
        MEMORY_DATA_DIR=str(work / "data"),
        MEMORY_ERASURE_KEY="rehearsal-erasure-key",
        MONGODB_URI=mongodb_uri,
        MONGODB_DB="memory",
        DATABASE_URL=f"postgres://postgres@{urllib.parse.quote(PG_SOCKET, safe='')}/{PG_DB}",
        CELERY_BROKER_URL=f"redis://{redis.address}:6379/0",
        MEMORY_CACHE_URL=f"redis://{redis.address}:6379/2",
        MEMORY_API_RATE_LIMIT=str(rate_limit),
        WEB_CONCURRENCY="2",
        GUNICORN_THREADS="4",
        FORWARDED_ALLOW_IPS=GATEWAY,
    )
    return env


def start_web(host: Host, env: dict[str, str]) -> None:
    host.commands.clear()
    host.run(
        [PY, "-m", "gunicorn", "-c", "gunicorn.conf.py", "memory_admin.wsgi"],
        {**env, "GUNICORN_BIND": f"{host.address}:8000"},
    )


PORTS = {"web1": 8000, "web2": 8000, "redis": 6379, "store": 27017}


FAULTS = {"web1": 8.0, "worker": 8.0, "redis": 6.0, "store": 6.0}  # host: seconds down


def faults(
    hosts: dict[str, Host], started: float, seconds: float, log: list[dict], names: list[str]
) -> None:
    """Kill each named host in turn and start it again, spread over the run (12 %, 32 %,
    52 %, 72 % with all four); what happened when goes into `log` (`back`: when its port
    accepted connections again)."""
    for index, name in enumerate(names):
        time.sleep(max(0.0, started + (0.12 + 0.2 * index) * seconds - time.time()))
        killed = time.time()
        hosts[name].kill()
        time.sleep(FAULTS[name])
        hosts[name].start()
        restarted = time.time()
        if name in PORTS:
            wait_port(hosts[name].address, PORTS[name], 120)
        log.append({"host": name, "killed": killed, "restarted": restarted, "back": time.time()})


def rate_limit_phase(
    hosts: dict[str, Host], keys: dict[str, str], env: dict[str, str], redis: Host
) -> list[dict]:
    """Both web hosts at a limit of LIMIT a minute; one key sends to both hosts directly,
    four threads each, within one fixed window: shared, the two hosts together allow
    LIMIT; per process (Redis down), each of the four gunicorn workers allows LIMIT."""
    for name in ("web1", "web2"):
        hosts[name].stop()
        start_web(hosts[name], {**env, "MEMORY_API_RATE_LIMIT": str(LIMIT)})
    for name in ("web1", "web2"):
        wait_port(hosts[name].address, 8000, 90)
    results = []
    for label, key, redis_up in (("Redis up", "limit-a", True), ("Redis down", "limit-b", False)):
        if not redis_up:
            redis.kill()
        if 60 - time.time() % 60 < 40:  # start at a window's beginning
            time.sleep(60 - time.time() % 60 + 0.2)
        tally: Counter[tuple[int, int]] = Counter()  # (window, status)
        lock = threading.Lock()

        def burst(host: Host, key: str = keys[key], tally=tally, lock=lock) -> None:
            api = Api(f"http://{host.address}:8000/api/v1", key)
            for _ in range(BURST // 8):
                status, _ = api.call("GET", f"/agents/{AGENT}/scopes?limit=1")
                with lock:
                    tally[(int(time.time() // 60), status)] += 1

        threads = [
            threading.Thread(target=burst, args=(hosts[n],))
            for n in ("web1", "web2")
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        windows = {w for w, _ in tally}
        results.append(
            {
                "phase": label,
                "limit": LIMIT,
                "sent": sum(tally.values()),
                "windows": len(windows),
                "allowed": max(tally[(w, 200)] for w in windows),
                "limited": sum(c for (_, status), c in tally.items() if status == 429),
                "other": sum(c for (_, status), c in tally.items() if status not in (200, 429)),
            }
        )
    redis.start()
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the load runs")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--work", type=Path, default=ROOT / "var" / "rehearsal")
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help="the hosts killed during the load, in order (comma-separated; default all four)",
    )
    parser.add_argument("--settle", type=float, default=120.0, help="how long jobs may take after")
    parser.add_argument(
        "--no-rate-limit", action="store_true", help="skip the rate-limit phase (two minutes)"
    )
    args = parser.parse_args(argv)
    args.fault_hosts = [n for n in args.faults.split(",") if n]
    unknown = set(args.fault_hosts) - set(FAULTS)
    if unknown:
        parser.error(f"--faults: no host {', '.join(sorted(unknown))} (hosts: {', '.join(FAULTS)})")
    return args


def start_redis(redis: Host, env: dict[str, str]) -> None:
    """Redis keeps nothing: a restart is an empty broker and an empty cache."""
    argv = ["redis-server", "--bind", redis.address, "--port", "6379", "--save", ""]
    redis.run([*argv, "--appendonly", "no", "--protected-mode", "no"], env)
    wait_port(redis.address, 6379, 30)


def start_worker_host(worker: Host, env: dict[str, str], work: Path) -> None:
    """A Celery worker (the production flags) and beat, the sweeps' clock."""
    celery = [PY, "-m", "celery", "-A", "memory_admin"]
    worker.run(
        [*celery, "worker", "--concurrency", "2", "--loglevel", "WARNING"]
        + ["--without-mingle", "--without-gossip"],
        env,
    )
    worker.run(
        [*celery, "beat", "--loglevel", "WARNING", "--schedule", str(work / "beat-schedule")], env
    )


def set_up(args: argparse.Namespace, hosts: dict[str, Host]) -> tuple[dict, dict, Popen]:
    """Every host started, the databases made, the keys created, nginx in front: the
    app's environment, the keys by name, and nginx's process."""
    work: Path = args.work
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    uri = store_host(hosts["store"], work, base_env)
    start_redis(hosts["redis"], base_env)
    sh("psql", "-h", PG_SOCKET, "-U", "postgres", "-qc", f"DROP DATABASE IF EXISTS {PG_DB}")
    sh("psql", "-h", PG_SOCKET, "-U", "postgres", "-qc", f"CREATE DATABASE {PG_DB}")
    env = app_env(work, uri, hosts["redis"], rate_limit=100_000)
    for step in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
        manage(env, *step)
    manage(env, "ensure_indexes")
    names = [f"client-{n}" for n in range(args.clients)] + ["admin-check", "limit-a", "limit-b"]
    keys = make_keys(env, names)
    for name in ("web1", "web2"):
        start_web(hosts[name], env)
    start_worker_host(hosts["worker"], env, work)
    conf = nginx_conf(work, [hosts["web1"], hosts["web2"]])
    nginx = Popen(["nginx", "-p", str(work), "-c", str(conf), "-g", "daemon off;"])
    Api(BASE, "").wait_until_up(within=120)
    for name in ("web1", "web2"):
        wait_port(hosts[name].address, 8000, 120)
    return env, keys, nginx


def load(args: argparse.Namespace, hosts: dict[str, Host], keys: dict[str, str]) -> tuple:
    """The clients for `args.seconds`, the faults meanwhile: (started, the fault log)."""
    started = time.time()
    client = [PY, str(ROOT / "deploy/rehearsal/client.py"), "--base", BASE, "--agent", AGENT]
    clients = [
        Popen(
            [*client, "--key", keys[f"client-{n}"], "--n", str(n)]
            + ["--until", str(started + args.seconds)]
            + ["--out", str(args.work / "clients" / f"{n}.jsonl")]
        )
        for n in range(args.clients)
    ]
    fault_log: list[dict] = []
    faults(hosts, started, args.seconds, fault_log, args.fault_hosts)
    for c in clients:
        c.wait()
    return started, fault_log


def rehearse(args: argparse.Namespace, hosts: dict[str, Host]) -> dict:
    """The run from set-up to report; what `verify` found, for the exit status."""
    env, keys, nginx = set_up(args, hosts)
    started, fault_log = load(args, hosts, keys)
    checked = verify(Api(BASE, keys["admin-check"]), args.work / "clients", settle=args.settle)
    (args.work / "checked.json").write_text(json.dumps({**checked, "faults": fault_log}, indent=1))
    limits = [] if args.no_rate_limit else rate_limit_phase(hosts, keys, env, hosts["redis"])
    text = report(
        args.work / "clients", fault_log, checked, limits, started, args, os.getloadavg()[0]
    )
    (args.work / "report.md").write_text(text)
    print(text)
    nginx.terminate()
    nginx.wait(10)
    return checked


def main(argv: list[str] | None = None) -> int:
    """Exit status 1 when an acknowledged write was lost or doubled, or a job stuck."""
    args = parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("the rehearsal makes network namespaces: run it as root")
    shutil.rmtree(args.work, ignore_errors=True)
    (args.work / "logs").mkdir(parents=True)
    (args.work / "clients").mkdir()
    (args.work / "secret").write_text(secrets.token_urlsafe(50))
    network_up()
    hosts = {n: Host(n, args.work / "logs") for n in ("web1", "web2", "worker", "redis", "store")}
    try:
        checked = rehearse(args, hosts)
    finally:
        for h in hosts.values():
            h.kill()
        network_down()
    return 1 if checked["lost"] or checked["duplicated"] or checked["stuck"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
