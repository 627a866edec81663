"""Claude Code transcripts written the way Claude Code writes them, for the playbook tests.

A `Session` appends JSONL lines: the person's prompts (string content), the model's text and
tool_use blocks, tool_result lines (with `is_error` and Claude Code's "Exit code N" shape for a
failing command, the refusal text of an interrupted tool use), a Stop hook's feedback
(`isMeta`) and its continuation, and the interruption marker.
"""

from __future__ import annotations

import json
from typing import Any

from memory_core.domain.transcript import TranscriptEntry, read_transcript

__all__ = ["REFUSED", "Session"]

REFUSED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
    "wait for the user to tell you how to proceed."
)


class Session:
    """One transcript being written, line by line."""

    def __init__(self, session_id: str = "5d1c2b7e-0f4a-4c1e-9b8a-3e2f1d0c9b8a") -> None:
        self.session_id = session_id
        self.lines: list[str] = []
        self._n = 0
        self._parent: str | None = None

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        self._n += 1
        uuid = f"{kind[0]}{self._n:04d}-0000-4000-8000-000000000000"
        record = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/shop",
            "sessionId": self.session_id,
            "version": "2.1.332",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": f"2026-11-25T10:{self._n // 60:02d}:{self._n % 60:02d}.000Z",
            **extra,
        }
        self._parent = uuid
        self.lines.append(json.dumps(record) + "\n")
        return uuid

    def prompt(self, text: str) -> Session:
        """The person's prompt."""
        self._line("user", {"role": "user", "content": text}, promptSource="sdk")
        return self

    def say(self, text: str) -> Session:
        """The model's text."""
        self._line("assistant", {"role": "assistant", "content": [{"type": "text", "text": text}]})
        return self

    def call(
        self, tool: str, tool_input: dict[str, Any], result: str = "ok", *, error: bool = False
    ) -> Session:
        """A tool call and its result (`error`: Claude Code marks the result is_error)."""
        use_id = f"toolu_{self._n + 1:04d}"
        block = {"type": "tool_use", "id": use_id, "name": tool, "input": tool_input}
        self._line("assistant", {"role": "assistant", "content": [block]})
        outcome: dict[str, Any] = {"tool_use_id": use_id, "type": "tool_result", "content": result}
        if error:
            outcome["is_error"] = True
        self._line("user", {"role": "user", "content": [outcome]}, toolUseResult={"stdout": result})
        return self

    def bash(self, command: str, output: str = "ok", *, exit_code: int = 0) -> Session:
        """A Bash call; a failing command's result reads "Exit code N" and is an error."""
        if exit_code:
            return self.call(
                "Bash", {"command": command}, f"Exit code {exit_code}\n{output}", error=True
            )
        return self.call("Bash", {"command": command}, output)

    def edit(self, path: str, old: str = "a = 1", new: str = "a = 2") -> Session:
        """An Edit of `path` (its strings must never reach a playbook)."""
        arguments = {"file_path": path, "old_string": old, "new_string": new}
        return self.call("Edit", arguments, f"The file {path} has been updated.")

    def refused(self, tool: str, tool_input: dict[str, Any]) -> Session:
        """A tool call the person interrupted, and Claude Code's interruption marker."""
        self.call(tool, tool_input, REFUSED, error=True)
        marker = [{"type": "text", "text": "[Request interrupted by user for tool use]"}]
        self._line("user", {"role": "user", "content": marker})
        return self

    def stop_hook(self, reason: str = "memstrata: store what is worth keeping.") -> Session:
        """A Stop hook's feedback: Claude Code's own line, which the model then answers."""
        content = f"Stop hook feedback:\n{reason}"
        self._line("user", {"role": "user", "content": content}, isMeta=True)
        return self

    def entries(self) -> list[TranscriptEntry]:
        """The transcript read as memstrata reads it."""
        return read_transcript(self.lines).entries
