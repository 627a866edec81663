"""Plain typed settings of the Claude Code hooks (`memstrata hook <event>`); no env reading."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["HookPolicy"]


class HookPolicy(BaseModel):
    """What each hook injects or records, and how long it may take."""

    model_config = ConfigDict(frozen=True)

    session_start: bool = Field(
        True, description="SessionStart injects the project's context (off: prints nothing)."
    )
    user_prompt_submit: bool = Field(
        True, description="UserPromptSubmit injects memories that match the prompt."
    )
    pre_compact: bool = Field(
        True, description="PreCompact records the transcript into conversation memory."
    )
    session_end: bool = Field(
        True,
        description="SessionEnd records the transcript and stores the session's summary as an "
        "episodic memory.",
    )
    start_tokens: int = Field(
        2000,
        ge=100,
        le=2500,
        description="Budget of the session-start context, in tokens (Claude Code caps hook "
        "context at 10,000 characters; the text is also cut to 9,500).",
    )
    prompt_tokens: int = Field(
        600, ge=50, le=2500, description="Budget of the memories injected for one prompt."
    )
    prompt_max_hits: int = Field(
        5, ge=1, le=20, description="Most memories injected for one prompt."
    )
    # Measured with bench.hook_replay on LoCoMo dev (conv-26, 80 questions): evidence reached
    # 37/80 at 0 (strong only), 55 at 200, 58 at 300 and at 600; injected ~283 tokens a prompt.
    prompt_partial_tokens: int = Field(
        300,
        ge=0,
        le=2500,
        description="Part of `prompt_tokens` that hits of only partial match strength may take "
        "(strong matches may take all of it; weak ones are never injected; 0: strong only).",
    )
    prompt_min_relevance: float = Field(
        0.0,
        ge=0,
        le=1,
        description="An extra relative floor of an injected hit (search's fused relevance, 1 = "
        "the best candidate); the absolute floor is the match strength (see "
        "`prompt_partial_tokens`).",
    )
    prompt_min_chars: int = Field(
        12, ge=1, description="Prompts shorter than this (e.g. 'yes', 'go on') inject nothing."
    )
    prompt_semantic_wait: float = Field(
        0.0,
        ge=0,
        le=5,
        description="Seconds UserPromptSubmit waits for the embedding model before searching by "
        "keywords only; 0 (default): keyword search, because loading the model in a fresh "
        "process takes longer than the hook's budget (docs/benchmarks.md).",
    )
    warm: bool = Field(
        True,
        description="UserPromptSubmit first asks the running `memstrata serve` of the same "
        "store (over a per-user Unix socket) to answer, with the model it holds warm, so recall "
        "matches meaning as well as words; when none answers within `warm_wait`, the hook "
        "searches the store itself by keywords. Off: always the hook's own keyword search.",
    )
    warm_wait: float = Field(
        0.8,
        gt=0,
        le=10,
        description="Seconds the prompt hook waits for the warm server's answer before it "
        "searches on its own (no server listening costs microseconds, not this wait).",
    )
    pre_tool_use: bool = Field(
        True,
        description="PreToolUse shows the model the procedural rules whose condition a tool call "
        "meets (e.g. 'when committing' at `git commit`), once per rule per session; it never "
        "blocks a tool.",
    )
    pre_tool_use_block: bool = Field(
        False,
        description="PreToolUse denies a tool call that meets a procedural rule marked blocking "
        '(stored with metadata {"blocking": true}); Claude Code tells the model the rule as '
        "the reason. Off (default): no rule ever blocks a tool, blocking ones are shown as "
        "context like the others.",
    )
    subagents: bool = Field(
        True,
        description="SubagentStart gives a sub-agent the memories and rules that match its task; "
        "SubagentStop keeps its result as an episodic memory authored by the agent type.",
    )
    session_end_inline: float = Field(
        0.7,
        ge=0,
        le=600,
        description="Seconds SessionEnd records in its own process before it hands the rest of "
        "a long capture to a process of its own (Claude Code cancels SessionEnd hooks after "
        "1.5 s in all, and starting takes 0.25-0.5 s of it); that process goes on from the "
        "saved place, so nothing is lost or written twice. 0: record everything in the hook.",
    )
    playbook_promotion: bool = Field(
        True,
        description="PreCompact and SessionEnd store each flow that completed without an error "
        "left and that the person approved (thanks, or a next prompt that moves on without "
        "correcting it) as a playbook of the user (MEMSTRATA_HOOKS__USER_ID, else USER_NAME, "
        "else 'user'): the request, its key steps, the outcome; one per flow, redacted.",
    )
    playbook_injection: bool = Field(
        True,
        description="UserPromptSubmit shows the user's playbook that matches the prompt "
        "strongly, once per session, as a recipe the model may follow or adapt.",
    )
    playbook_tokens: int = Field(
        400, ge=100, le=1500, description="Budget of one injected playbook recipe, in tokens."
    )
    stop_ask: bool = Field(
        True,
        description="Stop asks the model, in one short sentence and at most once per flow of "
        "substance, to store what is worth keeping with `append` or `learn` (or to do nothing). "
        "Off: the Stop hook never speaks.",
    )
    stop_min_prompts: int = Field(
        3,
        ge=1,
        description="Prompts since the last save (or the last ask) before Stop asks.",
    )
    stop_min_tool_calls: int = Field(
        5,
        ge=0,
        description="Tool calls since the last save (or the last ask) before Stop asks.",
    )
    user_name: str | None = Field(
        None,
        max_length=100,
        description="The author of the person's captured prompts (unset: 'user'). Set it to "
        "your name, and a search or a question that names you lifts what you said; on a store "
        "several people share, it says who asked.",
    )
    assistant_name: str | None = Field(
        None,
        max_length=100,
        description="The author of the model's captured answers (unset: 'assistant').",
    )
    user_id: str | None = Field(
        None,
        description="Whose stored preferences (`update_preference`) the session-start context "
        "lists; unset, none are listed.",
    )
    timeout: float = Field(
        3.0,
        gt=0,
        le=60,
        description="Seconds after which SessionStart or UserPromptSubmit gives up and prints "
        "nothing (e.g. a database locked by a long write).",
    )
    record_timeout: float = Field(
        30.0,
        gt=0,
        le=600,
        description="Seconds PreCompact or SessionEnd may spend recording a transcript; what is "
        "recorded by then is kept and the next hook continues from there.",
    )
