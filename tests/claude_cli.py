"""The real Claude Code CLI against a stub model, for the end-to-end tests.

`StubModel` is a Messages API on 127.0.0.1 that Claude Code talks to through
ANTHROPIC_BASE_URL: it records every request body (exactly what the model would have seen) and
answers the conversation's requests from a script (text, or a tool call). `run_claude` runs
`claude -p` with a temporary HOME and telemetry, auto-update and non-essential traffic off.

The CLI is the pinned npm package `make test` installs into .claude-cli/ (MEMSTRATA_CLAUDE
points at it). Without it the tests skip and say so, unless MEMSTRATA_REQUIRE_CLAUDE=1 (set by
.ci/run), where they fail instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CLAUDE_VERSION = "2.1.332"
MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class Text:
    """A scripted answer: the model says this text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """A scripted answer: the model calls one tool (Claude Code runs it and asks again)."""

    name: str
    input: Mapping[str, Any]
    text: str = ""


Reply = Text | ToolCall


@dataclass
class Request:
    """One request Claude Code sent: its path and JSON body."""

    path: str
    body: dict[str, Any]
    arrived: float = 0.0  # time.monotonic() when the request came in

    @property
    def is_conversation(self) -> bool:
        """A request of the agent loop (it lists tools), not a side request (titles, quota)."""
        return (
            self.path.startswith("/v1/messages")
            and "count_tokens" not in self.path
            and bool(self.body.get("tools"))
        )


@dataclass
class StubModel:
    """A Messages API stand-in: scripted replies, every request recorded.

    Conversation requests take the next reply of `script` (a `Text("ok")` when it runs out);
    a reply may also be a function of the request, for answers that depend on what was sent
    (a tool_use id to echo, a ToolSearch to answer first). Side requests get a short text.
    """

    script: list[Reply | Callable[[Request], Reply]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: count(1))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def conversation(self) -> list[Request]:
        """The agent-loop requests, in the order they arrived."""
        with self._lock:
            return [r for r in self.requests if r.is_conversation]

    def record(self, path: str, body: dict[str, Any]) -> Request:
        request = Request(path, body, time.monotonic())
        with self._lock:
            self.requests.append(request)
        return request

    def reply_to(self, request: Request) -> Reply:
        if not request.is_conversation:
            return Text("ok")
        with self._lock:
            step = self.script.pop(0) if self.script else Text("ok")
        return step(request) if callable(step) else step

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):024d}"


def _blocks(model: StubModel, reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    if isinstance(reply, ToolCall):
        blocks.append(
            {
                "type": "tool_use",
                "id": model.next_id("toolu"),
                "name": reply.name,
                "input": dict(reply.input),
            }
        )
    return blocks


def _events(model: StubModel, body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The SSE events of one streamed answer, in the Messages API's order."""
    blocks = _blocks(model, reply)
    stop = "tool_use" if isinstance(reply, ToolCall) else "end_turn"
    yield {
        "type": "message_start",
        "message": {
            "id": model.next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield {"type": "message_stop"}


def _message(model: StubModel, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """A whole (non-streamed) answer."""
    return {
        "id": model.next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", MODEL),
        "content": _blocks(model, reply),
        "stop_reason": "tool_use" if isinstance(reply, ToolCall) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return {"_raw": raw.decode("utf-8", "replace")}
    return body if isinstance(body, dict) else {"_body": body}


def _handler(model: StubModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the recorded requests are the log."""

        def do_GET(self) -> None:
            model.record(self.path, {})
            self._send_json({})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            request = model.record(path, _parse(raw))
            if path.endswith("/count_tokens"):
                self._send_json({"input_tokens": max(1, len(raw) // 4)})
            elif not path.endswith("/v1/messages"):
                self._send_json({})
            elif request.body.get("stream"):
                self._send_stream(request.body, model.reply_to(request))
            else:
                self._send_json(_message(model, request.body, model.reply_to(request)))

        def _send_json(self, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, body: dict[str, Any], reply: Reply) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for event in _events(model, body, reply):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (an interrupted turn, the CLI exiting) is no error here."""


class StubServer:
    """Serves a StubModel on 127.0.0.1 (an OS-chosen port) in a background thread."""

    def __init__(self, model: StubModel | None = None) -> None:
        self.model = model or StubModel()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler(self.model))
        self.model.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> StubModel:
        self._thread.start()
        return self.model

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def claude_path() -> Path:
    """The CLI: $MEMSTRATA_CLAUDE (set by `make test`), else the repository's .claude-cli copy."""
    configured = os.environ.get("MEMSTRATA_CLAUDE")
    if configured:
        return Path(configured)
    return REPO_ROOT / ".claude-cli" / "node_modules" / ".bin" / "claude"


def require_claude() -> Path:
    """The CLI's path; skips the test when it is not installed, or fails it where it must be."""
    exe = claude_path()
    if exe.exists():
        return exe
    reason = (
        f"the Claude Code CLI is not installed at {exe}: `make test` installs "
        f"@anthropic-ai/claude-code@{CLAUDE_VERSION} with npm (or set MEMSTRATA_CLAUDE)"
    )
    if os.environ.get("MEMSTRATA_REQUIRE_CLAUDE") == "1":
        pytest.fail(f"MEMSTRATA_REQUIRE_CLAUDE=1 but {reason}")
    pytest.skip(reason)


def claude_env(
    home: Path, model: StubModel, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of one offline `claude` run: its own HOME, the stub as the API."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "ANTHROPIC_BASE_URL": model.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-stub",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    env.update({name: os.environ[name] for name in ("LANG", "TMPDIR") if name in os.environ})
    env.update(extra or {})
    return env


@dataclass
class ClaudeRun:
    """What one `claude -p` run printed."""

    returncode: int
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The final `result` object (`--output-format json`, or the last stream-json line)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        for line in reversed(lines):
            data = json.loads(line)
            if isinstance(data, dict) and data.get("type", "result") == "result":
                return data
        raise AssertionError(f"no result in claude's output: {self.stdout[-2000:]}")

    @property
    def session_id(self) -> str:
        return str(self.result()["session_id"])


# ---- What a request holds


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        str(block.get("text", "")) for block in content or [] if isinstance(block, dict)
    )


def system_texts(request: Request) -> list[str]:
    """The text of each system-role message: where Claude Code puts hook context."""
    return [
        _text(message.get("content"))
        for message in request.body.get("messages", [])
        if message.get("role") == "system"
    ]


def hook_context(request: Request, event: str) -> str:
    """Everything a hook event added to this request ("<event> hook additional context: ...")."""
    marker = f"{event} hook additional context:"
    return "\n".join(text for text in system_texts(request) if marker in text)


def all_text(request: Request) -> str:
    """The request as the model reads it: system prompt, messages and tool definitions."""
    return json.dumps(request.body, ensure_ascii=False)


def tool_results(request: Request, tool: str) -> list[dict[str, Any]]:
    """The tool_result blocks answering calls of `tool` (by its full name) in this request."""
    names: dict[str, str] = {}
    found: list[dict[str, Any]] = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                names[block["id"]] = block["name"]
            elif block.get("type") == "tool_result" and names.get(block["tool_use_id"]) == tool:
                found.append(block)
    return found


def result_text(block: Mapping[str, Any]) -> str:
    """A tool_result's content as the model reads it."""
    return _text(block.get("content"))


PLUGIN_TOOLS = "mcp__plugin_memstrata_memstrata__"
SETTINGS_TOOLS = "mcp__memstrata__"


def mcp_call(tool: str, arguments: Mapping[str, Any], prefix: str = PLUGIN_TOOLS) -> list[Reply]:
    """The model's two steps to call a deferred MCP tool: load it with ToolSearch, then call it."""
    name = prefix + tool
    return [ToolCall("ToolSearch", {"query": f"select:{name}"}), ToolCall(name, arguments)]


# ---- Running the CLI in a workspace


@dataclass
class ClaudeWorkspace:
    """A temporary HOME, a git checkout to work in and a memstrata database, for `claude -p`."""

    home: Path
    project: Path
    db: Path
    model: StubModel
    # A loaded machine must not fail a test: the hooks' own time limits (3 s to give up, 0.8 s
    # for the warm server's answer) are raised below Claude Code's 10 s hook timeout, and
    # Claude Code waits up to 60 s, not ~5 s, for the MCP server before its first request
    # (on a load of 10 it sent the first request without memstrata's tools in 2 runs of 5).
    env: dict[str, str] = field(
        default_factory=lambda: {
            "MEMSTRATA_HOOKS__TIMEOUT": "9",
            "MEMSTRATA_HOOKS__WARM_WAIT": "5",
            "CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "60000",
        }
    )

    @classmethod
    def create(cls, root: Path, model: StubModel, name: str = "shop") -> ClaudeWorkspace:
        home = root / "home"
        home.mkdir(parents=True)
        project = root / name
        init_checkout(project)
        return cls(home=home, project=project, db=root / "memory.db", model=model)

    def memstrata_env(self) -> dict[str, str]:
        """What memstrata's hooks and server need in Claude Code's environment."""
        return {"MEMSTRATA_DB": str(self.db), **self.env}

    def run(
        self,
        prompt: str,
        *,
        plugin: bool = True,
        resume: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> ClaudeRun:
        """`claude -p PROMPT` in the checkout, with the plugin (or the settings `setup` wrote)."""
        command = ["-p", prompt, "--output-format", "json", *self._common(plugin), *args]
        if resume is not None:
            command = ["--resume", resume, *command]
        return self._claude(command, env=env)

    def converse(
        self, prompts: Sequence[str], *, plugin: bool = True, env: Mapping[str, str] | None = None
    ) -> ClaudeRun:
        """Several prompts in one session (stream-json): each sent once the last one is done."""
        command = [
            str(require_claude()),
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            *self._common(plugin),
        ]
        lines: list[str] = []
        with subprocess.Popen(
            command,
            cwd=self.project,
            env=claude_env(self.home, self.model, {**self.memstrata_env(), **(env or {})}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            assert process.stdin is not None and process.stdout is not None
            try:
                for prompt in prompts:
                    message = {"type": "user", "message": {"role": "user", "content": prompt}}
                    process.stdin.write(json.dumps(message) + "\n")
                    process.stdin.flush()
                    # Closing stdin early would drop the prompts still queued: wait for each
                    # turn's result first.
                    for line in process.stdout:
                        lines.append(line)
                        if json.loads(line).get("type") == "result":
                            break
                out, err = process.communicate(timeout=300)  # closes stdin: the CLI exits
            except BaseException:
                process.kill()
                raise
        return ClaudeRun(process.returncode, "".join(lines) + out, err)

    def setup_claude_code(self) -> subprocess.CompletedProcess[str]:
        """`memstrata setup claude-code` against this HOME and database."""
        env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", ""), **self.memstrata_env()}
        return subprocess.run(
            [str(memstrata_exe()), "setup", "claude-code"],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def call(self, tool: str, **arguments: Any) -> Any:
        """One memstrata tool call through the SDK, by a server started in the checkout.

        The server derives the project from the checkout as the plugin's server does
        (MEMSTRATA_PROJECT_SCOPE=git), so seeding and checking need no project name.
        """
        result = asyncio.run(self.call_raw(tool, arguments))
        if result.is_error:
            log = (self.home / "seed-server.log").read_text(encoding="utf-8", errors="replace")
            raise AssertionError(f"{tool} failed: {result.content}\nserver log:\n{log[-4000:]}")
        return result

    async def call_raw(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's result, error or not."""
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", ""),
            "MEMSTRATA_PROJECT_SCOPE": "git",
            "MEMSTRATA_TOOLSETS": "all",
            **self.memstrata_env(),
        }
        params = StdioServerParameters(
            command=str(memstrata_exe()), args=["serve"], env=env, cwd=str(self.project)
        )
        with (self.home / "seed-server.log").open("a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as c:
                return await c.call_tool(tool, arguments)

    def _common(self, plugin: bool) -> list[str]:
        allowed = PLUGIN_TOOLS.rstrip("_") if plugin else SETTINGS_TOOLS.rstrip("_")
        # Root may not use --dangerously-skip-permissions; allowing the tools by name works.
        common = ["--allowedTools", "Bash", allowed]
        if plugin:
            common += ["--plugin-dir", str(REPO_ROOT)]
        return common

    def _claude(self, args: Sequence[str], env: Mapping[str, str] | None) -> ClaudeRun:
        return run_claude(
            args,
            home=self.home,
            cwd=self.project,
            model=self.model,
            env={**self.memstrata_env(), **(env or {})},
        )


def init_checkout(path: Path) -> None:
    """A git repository with one commit, as a project folder."""
    path.mkdir(parents=True)
    (path / "README.md").write_text("# shop\n", encoding="utf-8")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", *args],
            cwd=path,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    git("add", "README.md")
    git("commit", "-q", "-m", "init")


def memstrata_exe() -> Path:
    """The installed console script, next to the interpreter running the tests."""
    return Path(sys.executable).parent / "memstrata"


def run_claude(
    args: Sequence[str],
    *,
    home: Path,
    cwd: Path,
    model: StubModel,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> ClaudeRun:
    """Runs the CLI once. The timeout only guards against a hang; it is never a test deadline."""
    done = subprocess.run(
        [str(require_claude()), *args],
        cwd=cwd,
        env=claude_env(home, model, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return ClaudeRun(done.returncode, done.stdout, done.stderr)
