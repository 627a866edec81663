"""Summarizers: LLM endpoints that write conversation summaries (configured by the operator)."""

from memory_core.summarizers.openai_chat import OpenAIChatSummarizer

__all__ = ["OpenAIChatSummarizer"]
