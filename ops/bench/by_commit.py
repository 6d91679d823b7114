"""The load bench against several commits, one after the other, in one table.

Each commit is checked out into a temporary git worktree and served from there
(``--server-env PYTHONPATH=<worktree>/src`` of ``ops.bench.load``), while the bench
itself, the reference operator and the load generator are this checkout's, so every
commit meets the same load. Figures of one invocation are comparable with each other;
the machine's noise still applies, so run it on a quiet machine and read the CPU ms per
request beside the requests per second.

    .venv/bin/python -m ops.bench.by_commit 3f8f1a8 HEAD -- --phases balance,items,prizes
    (everything after ``--`` goes to ops.bench.load; default: --duration 15 --rate 0
    --pgbench-seconds 0)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BENCH_ARGS = ["--duration", "15", "--warmup", "3", "--rate", "0", "--pgbench-seconds", "0"]


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def bench(commit: str, bench_args: list[str], workdir: Path) -> dict[str, Any]:
    sha = git("rev-parse", "--short", commit)
    tree = workdir / sha
    git("worktree", "add", "--detach", "-f", str(tree), sha)
    out = workdir / f"{sha}.json"
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ops.bench.load",
                *bench_args,
                "--server-env",
                f"PYTHONPATH={tree / 'src'}",
                "--json",
                str(out),
            ],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        results = json.loads(out.read_text())
    finally:
        git("worktree", "remove", "--force", str(tree))
    results["sha"] = sha
    results["subject"] = git("log", "-1", "--format=%s", sha)
    return results


def rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    out = []
    for phase in results.get("phases", []):
        cpu = phase.get("cpu_ms_per_request") or {}
        lag = (phase.get("projection_lag") or {}).get("p99_s")
        out.append(
            (
                results["sha"],
                phase["phase"],
                f"{phase['per_second']:,.1f}",
                f"{phase['p99_ms']:,.0f}" if phase.get("p99_ms") is not None else "-",
                "-" if not cpu else f"{cpu.get('api', 0):.1f}",
                "-" if not cpu else f"{cpu.get('total', 0):.1f}",
                "-" if lag is None else f"{lag:.2f}",
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        split = argv.index("--")
        argv, bench_args = argv[:split], argv[split + 1 :]
    else:
        bench_args = []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="+")
    parser.add_argument("--json", default=None, help="write every run's figures to this file")
    args = parser.parse_args(argv)
    bench_args = [*DEFAULT_BENCH_ARGS, *bench_args]
    from rich.console import Console
    from rich.table import Table

    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-commits-") as tmp:
        for commit in args.commits:
            print(f"bench: {commit} ...", flush=True)
            runs.append(bench(commit, bench_args, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=2, default=str))
    table = Table(title=f"load bench by commit ({' '.join(bench_args)})")
    for column in ("commit", "phase", "req/s", "p99 ms", "API CPU ms", "all CPU ms", "lag p99 s"):
        table.add_column(column, justify="left" if column in ("commit", "phase") else "right")
    for run in runs:
        for row in rows(run):
            table.add_row(*row)
    console = Console(width=140)
    console.print(table)
    for run in runs:
        load = run["machine"].get("load_before")
        console.print(f"{run['sha']}  {run['subject']}  (load average before: {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
