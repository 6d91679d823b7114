"""uvicorn's httptools protocol, with a response's writes sent as one.

uvicorn writes a response's status line and headers, then its body, as two calls of
``transport.write``, and uvloop sends each at once: two ``send`` system calls per
response. On loopback (and in a VM) a ``send`` is expensive: the kernel runs the
receiver's side of TCP inside it. Here the writes made in one turn of the event loop are
joined and sent at the end of that turn, so a response whose headers and body are sent
back to back (every response of this API) costs one ``send``.

Nothing else changes: flow control (pause/resume writing) is still the real
transport's, and once 64 KiB are pending they are sent at once (a large body is not held
back); a ``close`` sends what is pending first, an ``abort`` drops it as the real
transport would. On 2 cores this saved about 20 µs of server CPU per response and one
segment for the client to read (docs/performance.md, the fourth round).

Requests the HTTP parser refuses (request-line garbage, a malformed header, a bad
chunked encoding, a non-ASCII target) are answered with the API's error body, 400
``BAD_REQUEST``, instead of uvicorn's plain text; the connection is closed as before.
So is a request head (request line and headers) that grows beyond ``MAX_HEAD_BYTES``:
httptools bounds the target but not the headers, which it would otherwise collect
without end (a 10 MB header was served).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

FLUSH_BYTES = 64 * 1024  # pending bytes that are sent at once rather than at the turn's end
BAD_REQUEST = b'{"error":{"code":"BAD_REQUEST","message":"malformed HTTP request"}}'
MAX_HEAD_BYTES = 64 * 1024  # a request's target and headers


class _JoinedWrites:
    """A transport whose writes within one event-loop turn leave as one write."""

    __slots__ = ("_loop", "_pending", "_size", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None
        self._size = 0

    def write(self, data: bytes) -> None:
        if type(data) is not bytes:
            # what the real transport refuses fails here, in the sender's ``send``, as
            # before; a bytearray or memoryview is copied now, not read a turn later
            data = memoryview(data).tobytes()
        if self._pending is None:
            self._pending = [data]
            self._size = len(data)
            self._loop.call_soon(self._flush)
        else:
            self._pending.append(data)
            self._size += len(data)
        if self._size >= FLUSH_BYTES:  # a large body goes now, under the real flow control
            self._flush()

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        try:
            self._flush()
        finally:
            self._transport.close()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + (self._size if self._pending else 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class JoinedWritesProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_bytes: int | None = 0  # bytes of the head being read; None in a body
        super().connection_made(transport)
        self.transport = _JoinedWrites(transport, self.loop)  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        # a head still growing past the bound is refused as it arrives (httptools would
        # collect it whole first); one that ends in the read is measured when complete
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if (
            self._head_bytes is not None
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            self.logger.warning("Request head too large.")
            self.send_400_response("request head too large")

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        size = len(self.url) + sum(len(name) + len(value) for name, value in self.headers)
        if size > MAX_HEAD_BYTES:  # a head that arrived in one read: refused all the same
            raise ValueError("request head too large")  # the parser's error: a 400
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._head_bytes = 0  # what follows is the next request's head
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to what its parser refuses, with the API's error body."""
        content = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(BAD_REQUEST)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                BAD_REQUEST,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()
