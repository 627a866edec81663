"""`memstrata serve` over stdio: a client's first requests answered before the SDK is imported.

Trigger: Claude Code sends its version probe (`server/discover`) the moment it starts a stdio
server and waits for it, `subscriptions/listen`, `tools/list`, `prompts/list` and
`resources/list` before its first model request; importing the MCP SDK alone takes ~0.6 s,
seconds on a loaded machine, where the probe timed out and the session started without
memstrata's tools (issue 31). Why: those answers depend only on the code, the configuration
and the requests, so the SDK server's answers from an earlier start are exact
(server.cli.serve_answers). Outcome: they go out within milliseconds of the process starting,
and the SDK server takes over the same conversation once it is built.

1. `start_lean_stdio` (server.cli.main, before anything heavy is imported) takes the process's
   stdin and stdout: it keeps private duplicates for the protocol, points fd 0 at /dev/null
   and fd 1 at stderr (a stray print or a child process cannot touch the protocol, as under
   the SDK's own stdio transport) and starts a reader thread.
2. Until the SDK server is built, the reader answers a request when the SDK server answered
   the same request in the same conversation state before, and keeps every message in order.
   Only the read-only opening is answered (`OPENING_METHODS`): the first other request ends
   it, and it and everything after wait for the SDK, so nothing is answered from a state a
   tool call may have changed.
3. `hand_over` (server.app.serve_stdio, right before the SDK serves) points fd 0 and fd 1 at
   two pipes, which the SDK's own stdio transport then claims as it claims a terminal's. Into
   the first go the messages read so far (each request answered early under an id of its
   own, so the SDK passes through the same states: protocol era, initialize handshake,
   subscriptions), then every later line; from the second a relay thread copies the SDK's
   messages to the real stdout, leaving out its answers to the replayed requests (given
   already), each checked against what was given. A line the SDK's transport cannot read
   (not JSON, two messages, a lone surrogate, too deep) is answered with a JSON-RPC error
   instead of reaching it, as it would drop it unanswered (server.protocol.stdio_errors).
4. While the conversation is in its opening, the relay records the answers the cache lacked,
   for the next start.
Stdlib only, like everything that runs before the hand-over.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from server.cli.serve_answers import AnswerCache, request_key

__all__ = [
    "MOST_S",
    "OPENING_METHODS",
    "QUIET_S",
    "LeanStdio",
    "active",
    "start_lean_stdio",
    "starts_stdio",
]

# Requests whose answer depends only on the server's code and configuration, the request and
# the handshake before it: the opening Claude Code, the SDK client and the Inspector send.
OPENING_METHODS = frozenset(
    {
        "server/discover",
        "initialize",
        "subscriptions/listen",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "ping",
    }
)
# Notifications that change nothing an opening answer depends on, beyond what the state
# records (`Conversation`); any other message ends the opening.
_OPENING_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/cancelled"})

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"

# How long the client may be quiet after its opening before the rest of the start goes on
# without being asked, and the longest it waits for that (`LeanStdio.settle`).
QUIET_S = 1.0
MOST_S = 3.0

_RELAY_DRAIN_S = 5.0  # at exit, how long the relay may take to copy the SDK's last messages
# The longest EOF is held back from the SDK until it answered the requests it was given.
_EOF_WAIT_S = 30.0

_active: LeanStdio | None = None

# (key, the answer given early, the SDK's answer) and (key, the SDK's answer to record).
_ToCheck = tuple[str, dict[str, Any], dict[str, Any] | None]
_ToRecord = tuple[str, dict[str, Any]]


def _parse(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message as the SDK would accept it, or None (then it ends the opening)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    if "id" in message and not _is_id(message["id"]):
        return None
    return message


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _private_dup(fd: int) -> int:
    """A duplicate of `fd` that children do not inherit, outside the standard 0-2.

    Raises:
        OSError: It would be 0-2 (a standard stream is closed): no early answers then.
    """
    duplicate = os.dup(fd)  # not inheritable (PEP 446)
    if duplicate <= 2:
        os.close(duplicate)
        raise OSError(f"a standard stream is closed (fd {duplicate} is free)")
    return duplicate


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Conversation:
    """The client's messages so far, as far as the opening answers depend on them.

    The SDK decides a connection's protocol era by its first request, once (mcp.server.runner
    serve_dual_era_loop): a request carrying the 2026-07-28 `_meta` envelope, other than
    `initialize`, opens a modern connection, where every request is served on its own from
    its envelope; anything else opens a handshake connection, whose answers depend on its
    `initialize` and the notifications before them. A request's key therefore holds the era
    and, on a handshake connection, every `initialize` and notification so far, whole: two
    states that could differ in any answer never share a key.
    """

    def __init__(self) -> None:
        self.opening = True
        self._era: str | None = None
        self._seen: list[list[Any]] = []

    def key_of(self, message: dict[str, Any] | None) -> str | None:
        """The answer key of an opening request; None for anything else (which may end it)."""
        if not self.opening:
            return None
        method = message.get("method") if message is not None else None
        params = message.get("params") if message is not None else None
        if (
            message is None
            or not isinstance(method, str)
            or not set(message) <= {"jsonrpc", "id", "method", "params"}
            or not isinstance(params, dict | None)
        ):
            self.opening = False  # a response, a batch, a malformed line
            return None
        if "id" not in message:
            if method in _OPENING_NOTIFICATIONS:
                self._seen.append([method, params])
            else:
                self.opening = False
            return None
        if method not in OPENING_METHODS:
            self.opening = False
            return None
        if self._era is None:
            meta = (params or {}).get("_meta")
            enveloped = isinstance(meta, dict) and PROTOCOL_VERSION in meta
            self._era = "modern" if enveloped and method != "initialize" else "handshake"
        state: Any = self._era if self._era == "modern" else [self._era, self._seen]
        key = request_key(state, method, params)
        if method == "initialize":
            self._seen.append([method, params])
        return key


class LeanStdio:
    """The stdio wire of `memstrata serve`: early answers, then the SDK's (module docstring)."""

    def __init__(self, cache: AnswerCache) -> None:
        self.cache = cache
        self._lock = threading.Lock()  # guards everything below but the file descriptors
        self._out_lock = threading.Lock()  # one writer at a time on the real stdout
        self._conversation = Conversation()
        self._log: list[bytes | None] = []  # what the SDK is replayed; None: stdin closed
        self._eof = False
        self._waiting = False  # a request in the log has no answer yet
        self._handed = False
        self._token = os.urandom(6).hex()
        self._replays = 0
        # What the relay expects from the SDK (see `_inspect`):
        self._given: dict[Any, tuple[str, dict[str, Any]]] = {}  # replay id -> key, answer
        self._acked: dict[Any, tuple[str, dict[str, Any]]] = {}  # listen id -> key, answer
        self._unknown: dict[Any, tuple[str, str]] = {}  # request id -> key, method
        self._in_fd = self._out_fd = self._feed_fd = self._marker_fd = -1
        self._marker = f"memstrata-relay-end-{self._token}\n".encode()
        self._replayed = threading.Event()
        self._relayed = threading.Event()
        self._stirred = threading.Condition(self._lock)  # a message arrived, or stdin closed
        self._last_message = time.monotonic()

    # ---- Phase 1: before the SDK

    def start(self) -> None:
        """Take stdin and stdout for the protocol and start answering (module docstring, 1)."""
        self._in_fd = _private_dup(0)
        self._out_fd = _private_dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output is dropped
            os.dup2(null, 1)
        os.close(null)
        threading.Thread(target=self._read, name="memstrata-stdin", daemon=True).start()

    def settle(self, quiet_s: float = QUIET_S, most_s: float = MOST_S) -> None:
        """Return once the SDK is needed, or the client has been quiet for `quiet_s`.

        Needed: a request waits for it, or stdin closed; at most `most_s`, and not at all
        when nothing is recorded (the SDK answers the opening then).

        Trigger: once its opening is answered, Claude Code runs the prompt hook and sends
        its first model request, and the SDK's import and the store's opening (~1 s of CPU)
        slowed both on a busy two-core machine (first request 1.63 s after launch, 1.35 s
        with this wait; 0.49 s without memstrata). Outcome: the rest of the start waits for
        a pause or for a request only the SDK can answer (a tool call then waits for it).
        """
        if not self.cache.answers:
            return
        deadline = time.monotonic() + most_s
        with self._stirred:
            while not (self._waiting or self._eof):
                now = time.monotonic()
                wake = min(self._last_message + quiet_s, deadline)
                if wake <= now:
                    return
                self._stirred.wait(wake - now)

    def client_left(self) -> bool:
        """Whether stdin closed with no request waiting for an answer: nothing left to serve."""
        with self._lock:
            return self._eof and not self._waiting

    def _read(self) -> None:
        stream = os.fdopen(self._in_fd, "rb", closefd=False)
        try:
            for line in stream:
                self._take(line)
        except (OSError, ValueError):
            pass
        self._end()

    def _take(self, line: bytes) -> None:
        message = _parse(line) if self._conversation.opening else None
        reply = None
        with self._lock:
            key = self._conversation.key_of(message)
            handed = self._handed
            if not handed:
                answer = self.cache.get(key) if key is not None else None
                reply = self._early(message, key, answer) if answer is not None else None
                if reply is None:
                    self._log.append(line)
                    self._waiting |= message is None or (
                        "id" in message and message.get("method") != LISTEN
                    )
            if reply is None and key is not None and message is not None:
                self._unknown[message["id"]] = (key, message["method"])
            self._last_message = time.monotonic()
            self._stirred.notify_all()
        if reply is not None:
            self._emit(reply)
        elif handed:
            self._replayed.wait()
            with contextlib.suppress(OSError):
                self._feed(line)

    def _early(
        self, message: dict[str, Any] | None, key: str | None, answer: dict[str, Any]
    ) -> bytes | None:
        """The early answer to a request, logging what the SDK is to be replayed (lock held)."""
        if message is None or key is None:
            return None
        request_id, method = message["id"], message["method"]
        if method == LISTEN:
            ack = answer.get("ack")
            if not isinstance(ack, dict):
                return None
            # The SDK serves the subscription itself, under the client's id; its own
            # acknowledgement is left out (`_inspect`).
            self._log.append(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            self._acked[request_id] = (key, answer)
            return _frame(
                {"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": _ack(ack, request_id)}
            )
        if "result" not in answer:
            return None
        self._replays += 1
        replay_id = f"memstrata-replay-{self._token}-{self._replays}"
        self._log.append(_frame({**message, "id": replay_id}))
        self._given[replay_id] = (key, answer)
        return _frame({"jsonrpc": "2.0", "id": request_id, "result": answer["result"]})

    def _end(self) -> None:
        with self._lock:
            handed = self._handed
            if not handed:
                self._eof = True
                self._log.append(None)
            self._stirred.notify_all()
        if handed:
            self._replayed.wait()
            self._answered_before_eof()
            with contextlib.suppress(OSError):
                os.close(self._feed_fd)

    def _emit(self, data: bytes) -> None:
        with self._out_lock, contextlib.suppress(OSError):  # the client is gone
            _write_all(self._out_fd, data)

    # ---- Phase 2: the SDK serves

    def hand_over(self) -> bool:
        """Let the SDK's stdio transport take over (module docstring, 3).

        Call right before the SDK serves stdio. False when the client has left and no request
        waits for an answer: then there is nothing to serve.
        """
        with self._lock:
            if self._eof and not self._waiting:
                return False
            feed_r, self._feed_fd = os.pipe()
            relay_r, relay_w = os.pipe()
            self._marker_fd = _private_dup(relay_w)
            log_lines, self._log = self._log, []
            self._handed = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()  # nothing buffered may land in the protocol pipe
        os.dup2(feed_r, 0)
        os.dup2(relay_w, 1)
        os.close(feed_r)
        os.close(relay_w)
        threading.Thread(
            target=self._replay, args=(log_lines,), name="memstrata-replay", daemon=True
        ).start()
        threading.Thread(
            target=self._relay, args=(relay_r,), name="memstrata-stdout", daemon=True
        ).start()
        return True

    def finish(self) -> None:
        """After the SDK served: wait until the relay has copied its last messages."""
        if self._marker_fd < 0:
            return
        with contextlib.suppress(OSError):
            _write_all(self._marker_fd, self._marker)
            os.close(self._marker_fd)
        self._relayed.wait(_RELAY_DRAIN_S)

    def _answered_before_eof(self) -> None:
        """Wait (a bounded while) until the SDK has answered the requests it was given.

        Trigger: the client closed stdin right after its requests (a pipe of `initialize`,
        `tools/list`, EOF). Why: the SDK's stdio transport ends the session at EOF and cancels
        what it has not answered yet. Outcome: EOF reaches the SDK once its answers to the
        opening requests have been relayed, or after _EOF_WAIT_S.
        """
        stop = time.monotonic() + _EOF_WAIT_S
        while time.monotonic() < stop:
            with self._lock:
                if not self._given and not any(
                    method != LISTEN for _, method in self._unknown.values()
                ):
                    return
            time.sleep(0.01)

    def _replay(self, log_lines: list[bytes | None]) -> None:
        try:
            for line in log_lines:
                if line is None:
                    self._answered_before_eof()
                    os.close(self._feed_fd)
                    break
                self._feed(line)
        except OSError:
            pass
        finally:
            self._replayed.set()

    def _feed(self, line: bytes) -> None:
        """Pass a line to the SDK, or answer the error for what in it the SDK cannot read.

        The SDK's transport drops such a line without an answer
        (server.protocol.stdio_errors); it is loaded by now (the hand-over follows the SDK
        server's build).
        """
        from server.protocol.stdio_errors import sort_line

        feed, errors = sort_line(line)
        for answer in errors:
            self._emit(answer)
        if feed:
            _write_all(self._feed_fd, feed)

    def _relay(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                if line == self._marker:
                    break
                watching = self._given or self._acked or self._unknown
                if not watching or self._inspect(line):
                    self._emit(line)
        self._relayed.set()

    def _inspect(self, line: bytes) -> bool:
        """Check or record one of the SDK's messages; False: leave it out (given already)."""
        message = _parse(line)
        if message is None:
            return True
        with self._lock:
            if message.get("method") == ACKNOWLEDGED:
                check, record = self._expected_ack(message)
            elif "method" not in message and "id" in message:
                check, record = self._expected_response(message)
            else:
                return True
        if record is not None:
            self.cache.put(*record)
        if check is None:
            return True
        key, given, actual = check
        if actual != given:
            import logging  # only here: the early path loads nothing it does not use

            logging.getLogger(__name__).warning(
                "serve.early_answer_differed: an early stdio answer differed from the SDK "
                "server's; the next start uses the server's (%s)",
                self.cache.path,
            )
            self.cache.put(key, actual)
        return False

    def _expected_ack(self, message: dict[str, Any]) -> tuple[_ToCheck | None, _ToRecord | None]:
        """A subscription's acknowledgement: given early (check it) or to record (lock held)."""
        params = message.get("params")
        if not isinstance(params, dict):
            return None, None
        meta = params.get("_meta")
        sid = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        ack = {"ack": _ack(params, None)}
        if sid in self._acked:
            key, given = self._acked.pop(sid)
            return (key, given, ack), None
        if sid in self._unknown and self._unknown[sid][1] == LISTEN:
            key, _ = self._unknown.pop(sid)
            return None, ((key, ack) if self._conversation.opening else None)
        return None, None

    def _expected_response(
        self, message: dict[str, Any]
    ) -> tuple[_ToCheck | None, _ToRecord | None]:
        """A response: to a replayed request (check it) or one to record (lock held)."""
        request_id = message["id"]
        result = {"result": message["result"]} if "result" in message else None
        if request_id in self._given:
            key, given = self._given.pop(request_id)
            return (key, given, result), None
        if request_id in self._unknown:
            key, method = self._unknown.pop(request_id)
            if method != LISTEN and result is not None and self._conversation.opening:
                return None, (key, result)
        return None, None


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _ack(params: Mapping[str, Any], subscription: Any) -> dict[str, Any]:
    """Acknowledgement params for `subscription` (None: without an id, as recorded)."""
    meta = dict(params.get("_meta") or {})
    meta.pop(SUBSCRIPTION_ID, None)
    if subscription is not None:
        meta[SUBSCRIPTION_ID] = subscription
    return {**params, "_meta": meta}


def starts_stdio(args: Sequence[str]) -> bool:
    """Whether `memstrata ARGS` serves stdio with options this module knows to be harmless.

    Anything else (--http and its abbreviations, --help, a typo) takes the usual path, which
    reports it as before.
    """
    if args and args[0] != "serve":
        return False
    rest = list(args[1:])
    while rest:
        word = rest.pop(0)
        if word in ("-v", "-vv", "--verbose") or word.startswith("--toolsets="):
            continue
        if word == "--toolsets" and rest:
            rest.pop(0)
            continue
        return False
    return True


def start_lean_stdio(args: Sequence[str], environ: Mapping[str, str]) -> None:
    """Start answering stdin early (module docstring), then wait until the SDK is needed.

    A failure to start leaves the SDK path as it was.
    """
    global _active
    if os.name != "posix" or _active is not None:
        return
    try:
        wire = LeanStdio(AnswerCache.for_start(args, environ, os.getcwd()))
        wire.start()
    except OSError:
        return
    _active = wire
    wire.settle()


def active() -> LeanStdio | None:
    """The running early wire of this process, if `start_lean_stdio` started one."""
    return _active
