"""A summarizer that calls an OpenAI-compatible chat-completions endpoint."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx

from memory_core.errors import SummarizerError

__all__ = ["OpenAIChatSummarizer"]


class OpenAIChatSummarizer:
    """POST {base_url}/chat/completions with the instructions as the system message.

    Works with any server that speaks that API (vLLM, llama.cpp server, Ollama, LiteLLM, hosted
    providers). Failures raise SummarizerError; the conversation service then falls back.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = f"openai-chat:{model}"
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._transport = transport

    async def summarize(self, instructions: str, transcript: str, max_tokens: int) -> str:
        """Ask the endpoint for a summary of `transcript`; see Summarizer.summarize."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": transcript},
            ],
            "max_tokens": max(16, max_tokens),
            "temperature": 0,
        }
        try:
            async with httpx.AsyncClient(
                timeout=self._timeout, transport=self._transport
            ) as client:
                response = await client.post(self._url, json=body, headers=self._headers)
                response.raise_for_status()
                payload = response.json()
        except httpx.HTTPStatusError as exc:
            raise SummarizerError(f"endpoint answered HTTP {exc.response.status_code}") from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise SummarizerError(
                f"endpoint unreachable or invalid ({type(exc).__name__})"
            ) from exc
        try:
            text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise SummarizerError("endpoint answered without choices[0].message.content") from exc
        if not isinstance(text, str) or not text.strip():
            raise SummarizerError("endpoint answered with an empty summary")
        return text.strip()
