"""The HTTP protocol the API serves with (api/http_protocol.py), under a real uvicorn.

A response's status line, headers and body leave in one transport write; everything
else about HTTP/1.1 is unchanged: keep-alive, large streamed bodies, HEAD, a closing
connection that gets its whole answer first, and the API's own answers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.http_protocol import FLUSH_BYTES, MAX_HEAD_BYTES, JoinedWritesProtocol
from entrypoints.cli_serve import server_settings

SMALL = b'{"ok":true}'
CHUNK = bytes(range(256)) * 400  # 102,400 bytes, above FLUSH_BYTES
CHUNKS = 5
# many small numbered pieces sent back to back: joined, flushed at FLUSH_BYTES, and
# (to a slow reader) held back by the real transport's flow control
PIECES = [n.to_bytes(4, "big") * 256 for n in range(4096)]  # 1 KiB each, 4 MiB in all


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await receive()
    if scope["path"] == "/pieces":
        length = sum(len(piece) for piece in PIECES)
        headers = [(b"content-length", str(length).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for n, piece in enumerate(PIECES):
            body = {"type": "http.response.body", "body": piece, "more_body": n < len(PIECES) - 1}
            await send(body)
        return
    if scope["path"] == "/stream":
        length = len(CHUNK) * CHUNKS
        headers = [(b"content-length", str(length).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for n in range(CHUNKS):
            body = {"type": "http.response.body", "body": CHUNK, "more_body": n < CHUNKS - 1}
            await send(body)
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": SMALL})


class _Counted:
    """The real transport, with its writes counted (every call still reaches it)."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


COUNTERS: list[_Counted] = []


def counting(base: type[HttpToolsProtocol]) -> type[HttpToolsProtocol]:
    class Counting(base):  # type: ignore[valid-type, misc]
        def connection_made(self, transport: Any) -> None:
            counted = _Counted(transport)
            COUNTERS.append(counted)
            super().connection_made(counted)

    return Counting


def serve(protocol: Any) -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, http=protocol, lifespan="off", log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def joined() -> Iterator[int]:
    yield from serve(JoinedWritesProtocol)


def exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes]:
    """Send one request (none when empty) and read one response whole: (head, body)."""
    if request:
        sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        more = sock.recv(65536)
        assert more, f"connection closed mid-head: {data!r}"
        data += more
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if request.startswith(b"HEAD"):
        return head, body
    while len(body) < length:
        more = sock.recv(1 << 20)
        assert more, "connection closed mid-body"
        body += more
    return head, body


def get(path: str, extra: str = "", method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nhost: test\r\n{extra}\r\n".encode()


@pytest.mark.parametrize(
    ("base", "writes_per_response"), [(HttpToolsProtocol, 2), (JoinedWritesProtocol, 1)]
)
def test_a_response_is_one_write_where_httptools_makes_two(
    base: type[HttpToolsProtocol], writes_per_response: int
) -> None:
    COUNTERS.clear()
    for port in serve(counting(base)):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            for _ in range(10):
                head, body = exchange(sock, get("/small"))
                assert head.startswith(b"HTTP/1.1 200 OK")
                assert body == SMALL
            # the last response's write may still be counted in the server's thread
            deadline = time.monotonic() + 5
            while COUNTERS[0].writes < 10 * writes_per_response and time.monotonic() < deadline:
                time.sleep(0.01)
            assert [c.writes for c in COUNTERS] == [10 * writes_per_response]


def test_keep_alive_serves_many_requests_on_one_connection(joined: int) -> None:
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        answers = [exchange(sock, get("/small")) for _ in range(50)]
    assert all(head.startswith(b"HTTP/1.1 200 OK") for head, _ in answers)
    assert [body for _, body in answers] == [SMALL] * 50


def test_a_large_streamed_body_arrives_whole(joined: int) -> None:
    assert len(CHUNK) > FLUSH_BYTES
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        head, body = exchange(sock, get("/stream"))
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert body == CHUNK * CHUNKS
        _, after = exchange(sock, get("/small"))  # the connection is still in step
        assert after == SMALL


class _PauseCounting(JoinedWritesProtocol):
    pauses = 0

    def pause_writing(self) -> None:
        _PauseCounting.pauses += 1
        super().pause_writing()


def test_small_pieces_to_a_slow_reader_arrive_in_order_under_flow_control() -> None:
    _PauseCounting.pauses = 0
    for port in serve(_PauseCounting):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            sock.settimeout(10)
            sock.connect(("127.0.0.1", port))
            sock.sendall(get("/pieces"))
            time.sleep(0.3)  # the server writes far more than the socket buffers hold
            head, body = exchange(sock, b"")
            assert head.startswith(b"HTTP/1.1 200 OK")
            assert body == b"".join(PIECES)
            _, after = exchange(sock, get("/small"))
            assert after == SMALL
    assert _PauseCounting.pauses >= 1


def test_connection_close_gets_the_whole_answer_before_the_close(joined: int) -> None:
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        sock.sendall(get("/small", "connection: close\r\n"))
        data = b""
        while more := sock.recv(65536):
            data += more
    head, body = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert b"connection: close" in head.lower()
    assert body == SMALL


def test_head_gets_the_head_alone(joined: int) -> None:
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        head, body = exchange(sock, get("/small", method="HEAD"))
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert body == b""
        _, after = exchange(sock, get("/small"))
        assert after == SMALL


MALFORMED = {
    "request-line garbage": b"NOT A REQUEST\r\n\r\n",
    "binary garbage": bytes(range(256)),
    "a lower-case method": b"get /small HTTP/1.1\r\nhost: test\r\n\r\n",
    "a non-ASCII target": b"GET /sm\xffall HTTP/1.1\r\nhost: test\r\n\r\n",
    "a space in a header name": b"GET /small HTTP/1.1\r\nho st: test\r\n\r\n",
    "an unknown HTTP version": b"GET /small HTTP/7.3\r\nhost: test\r\n\r\n",
    "a bad content length": b"POST /small HTTP/1.1\r\ncontent-length: 1x\r\n\r\n",
    "two content lengths": b"POST /small HTTP/1.1\r\ncontent-length: 1\r\n"
    b"content-length: 2\r\n\r\nab",
    "a bad chunk size": b"POST /small HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
}


@pytest.mark.parametrize("request_bytes", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_gets_the_error_body_and_the_connection_closes(
    joined: int, request_bytes: bytes
) -> None:
    """What the HTTP parser refuses is answered like any refusal of the API: 400
    BAD_REQUEST with the error body (not uvicorn's plain text), then the close."""
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        sock.sendall(request_bytes)
        data = b""
        while more := sock.recv(65536):
            data += more
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.lower().split(b"\r\n")
    assert lines[0] == b"http/1.1 400 bad request"
    assert b"content-type: application/json" in lines
    assert b"connection: close" in lines
    assert f"content-length: {len(body)}".encode() in lines
    assert json.loads(body) == {
        "error": {"code": "BAD_REQUEST", "message": "malformed HTTP request"}
    }


def _read_to_close(sock: socket.socket) -> tuple[list[bytes], bytes]:
    data = b""
    while more := sock.recv(65536):
        data += more
    head, body = data.split(b"\r\n\r\n", 1)
    return head.lower().split(b"\r\n"), body


def test_a_request_head_beyond_64_kib_is_refused_even_in_one_read(joined: int) -> None:
    """httptools bounds the target but not the headers: a head (target and headers)
    beyond MAX_HEAD_BYTES is refused like any malformed request, whether it arrives whole
    or keeps growing; one just below the bound is served."""
    assert MAX_HEAD_BYTES == 64 * 1024
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        head, body = exchange(sock, get("/small", f"x-big: {'x' * 60000}\r\n"))
        assert head.startswith(b"HTTP/1.1 200 OK") and body == SMALL
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        sock.sendall(get("/small", f"x-big: {'x' * 70000}\r\n"))  # whole, in one piece
        lines, body = _read_to_close(sock)
    assert lines[0] == b"http/1.1 400 bad request"
    assert json.loads(body)["error"]["code"] == "BAD_REQUEST"
    with socket.create_connection(("127.0.0.1", joined), timeout=10) as sock:
        sock.sendall(b"GET /small HTTP/1.1\r\nx-big: " + b"x" * 60000)  # no end yet
        sock.sendall(b"x" * 8000)  # past the bound, still no end: refused as it grows
        lines, body = _read_to_close(sock)
    assert lines[0] == b"http/1.1 400 bad request"
    assert json.loads(body)["error"]["code"] == "BAD_REQUEST"


def test_the_api_serves_with_it() -> None:
    settings = server_settings()
    assert settings["http"] is JoinedWritesProtocol
    assert settings["loop"] == "uvloop"


def test_a_body_the_transport_refuses_fails_at_once_and_a_bytearray_is_copied() -> None:
    async def main() -> bytes:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, left)
        from api.http_protocol import _JoinedWrites

        joined = _JoinedWrites(transport, loop)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            joined.write("text")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            joined.write(5)  # type: ignore[arg-type]
        buffer = bytearray(b"xyz")
        joined.write(buffer)
        buffer[:] = b"---"  # changed after the write: what was written was its old content
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        right.setblocking(False)
        received = right.recv(100)
        joined.close()
        right.close()
        return received

    assert asyncio.run(main()) == b"xyz"


def test_pending_bytes_count_in_the_write_buffer_size() -> None:
    async def main() -> tuple[int, int, bytes]:
        loop = asyncio.get_running_loop()
        left, right = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, left)
        from api.http_protocol import _JoinedWrites

        joined = _JoinedWrites(transport, loop)  # type: ignore[arg-type]
        joined.write(b"abc")
        joined.write(b"de")
        pending = joined.get_write_buffer_size()
        await asyncio.sleep(0)  # the turn ends: one write of both
        await asyncio.sleep(0)
        right.setblocking(False)
        received = right.recv(100)
        joined.close()
        right.close()
        return pending, joined.get_write_buffer_size(), received

    pending, after, received = asyncio.run(main())
    assert (pending, after, received) == (5, 0, b"abcde")
