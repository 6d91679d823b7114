"""Which process a PostgreSQL backend serves, from /proc: the API's or the worker's.

The platform's backends all carry one ``application_name``; ``pg_stat_activity`` gives
each backend's client port, and a client process's sockets (``/proc/PID/fd`` ->
``socket:[inode]``, ``/proc/net/tcp`` -> local port) say which process holds that
port. So a backend's CPU is charged to the API processes or to the background worker
(issue 18: "API's PostgreSQL backends" and "worker's backends" apart).

A backend that ends between two snapshots (a pool's overflow connection closed) takes
its CPU with it, as before; the snapshots are taken at the edges of each phase.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds (empty when it is gone)."""
    found: set[int] = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


def local_ports() -> dict[int, int]:
    """inode -> local TCP port of every TCP socket of this network namespace."""
    ports: dict[int, int] = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as handle:
                next(handle)
                for line in handle:
                    fields = line.split()
                    port = int(fields[1].rsplit(":", 1)[1], 16)
                    ports[int(fields[9])] = port
        except (OSError, StopIteration):
            continue
    return ports


def port_owners(groups: dict[str, Iterable[int]]) -> dict[int, str]:
    """local port -> group name, for every TCP socket the groups' processes hold."""
    by_inode = local_ports()
    owners: dict[int, str] = {}
    for name, pids in groups.items():
        for pid in pids:
            for inode in socket_inodes(pid):
                port = by_inode.get(inode)
                if port is not None:
                    owners[port] = name
    return owners


def split_backends(
    backends: Iterable[tuple[int, int | None]], groups: dict[str, Iterable[int]]
) -> dict[str, list[int]]:
    """Backend pids by the group of the process at their client port: ``<group>_pg``,
    and ``other_pg`` for the ones no group's process holds (a socket closed meanwhile,
    or a Unix-socket client)."""
    owners = port_owners(groups)
    split: dict[str, list[int]] = {f"{name}_pg": [] for name in groups}
    split["other_pg"] = []
    for pid, port in backends:
        owner = owners.get(port) if port is not None else None
        split[f"{owner}_pg" if owner else "other_pg"].append(pid)
    return split
