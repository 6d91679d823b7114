"""What one event log on one PostgreSQL can carry: inserts/s at the event table's lock.

``python -m ops.bench.log_inserts [--processes 2] [--threads 8] [--events 2] [--seconds 10]``
creates a fresh schema, then runs ``--processes`` processes, each with the platform's
own event store (``SerialInsertRecorder``: ``LOCK TABLE ... IN EXCLUSIVE MODE``,
``NOTIFY``, ``INSERT`` in one server-side statement, and the process's group commit) and
``--threads`` threads appending ``--events`` events of ``--bytes`` bytes per insert (a
balance play makes two inserts: its intent, 2 events, and its settlement, 3 or 4) as
fast as they can for ``--seconds``. It prints inserts/s (what callers asked for),
statements/s (what reached the table lock after the group commit joined them), events/s,
and the latency of one insert (p50/p99), then drops the schema.

Every insert takes the one table lock for its statement and commit, so this is the
log's ceiling on this machine and disk, whatever else the platform does;
docs/scaling.md reads it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import sys
import threading
import time
import uuid
from typing import Any

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _worker(url: str, threads: int, events: int, size: int, seconds: float, out: Any) -> None:
    from eventsourcing.persistence import StoredEvent

    from application.platform import EventStore
    from application.store.database_url import parse_database_url

    for attempt in range(1, 11):  # start-up DDL of processes starting together collides
        try:
            store = EventStore(env=parse_database_url(url).eventsourcing_env())
            break
        except Exception:
            if attempt == 10:
                raise
            time.sleep(0.2 * attempt)
    recorder = store.recorder
    state = secrets.token_bytes(size)
    latencies: list[float] = []
    lock = threading.Lock()
    start_at = time.monotonic() + 2.0  # every thread (and process) ready first
    stop_at = start_at + seconds

    def run() -> None:
        mine: list[float] = []
        while time.monotonic() < start_at:
            time.sleep(0.005)
        while time.monotonic() < stop_at:
            originator = uuid.uuid4()
            rows = [
                StoredEvent(originator, version, "bench.log_inserts:Event", state)
                for version in range(1, events + 1)
            ]
            began = time.perf_counter()
            recorder.insert_events(rows)
            mine.append(time.perf_counter() - began)
        with lock:
            latencies.extend(mine)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    out.put({"inserts": len(latencies), "statements": recorder.group.statements, "lat": latencies})
    store.close()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import psycopg

    from application.platform import EventStore
    from application.store.database_url import parse_database_url

    schema = f"bench_log_{os.getpid()}_{secrets.token_hex(3)}"
    url = f"{args.database_url.split('?', 1)[0]}?schema={schema}"
    location = parse_database_url(url)
    with psycopg.connect(location.conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        EventStore(env=location.eventsourcing_env()).close()  # the table and function once
        queue: Any = multiprocessing.get_context("spawn").Queue()
        processes = [
            multiprocessing.get_context("spawn").Process(
                target=_worker,
                args=(url, args.threads, args.events, args.bytes, args.seconds, queue),
            )
            for _ in range(args.processes)
        ]
        for process in processes:
            process.start()
        parts = [queue.get(timeout=args.seconds + 120) for _ in processes]
        for process in processes:
            process.join()
    finally:
        with psycopg.connect(location.conninfo(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    latencies = sorted(x for part in parts for x in part["lat"])
    inserts = sum(part["inserts"] for part in parts)
    statements = sum(part["statements"] for part in parts)

    def pct(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {
        "processes": args.processes,
        "threads": args.threads,
        "events_per_insert": args.events,
        "bytes_per_event": args.bytes,
        "seconds": args.seconds,
        "inserts_per_s": round(inserts / args.seconds, 1),
        "statements_per_s": round(statements / args.seconds, 1),
        "events_per_s": round(inserts * args.events / args.seconds, 1),
        "p50_ms": round(pct(0.50), 2) if latencies else None,
        "p99_ms": round(pct(0.99), 2) if latencies else None,
        "load_average": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.log_inserts", description=__doc__)
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL)
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="per process")
    parser.add_argument("--events", type=int, default=2, help="events per insert")
    parser.add_argument("--bytes", type=int, default=600, help="bytes per event's state")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    result = measure(args)
    for key, value in result.items():
        print(f"{key:>18}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
