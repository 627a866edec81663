"""Developer-memory pairs for calibrating and testing near-duplicate detection.

Written for memstrata (not taken from LoCoMo or any data set): what a coding assistant stores
about a project, restated the way retries, hooks and paraphrasing models restate it. `SAME`
pairs state one fact; `DIFFERENT` pairs look alike but differ in a number, a date, a name or a
negation (or are simply other facts about the same subject): merging one of them would be a
false merge. domain/duplicates.py's thresholds were chosen on these with all-MiniLM-L6-v2.
"""

from __future__ import annotations

__all__ = ["DIFFERENT", "SAME"]

SAME: tuple[tuple[str, str], ...] = (
    (
        "Run the test suite with `make test` before pushing.",
        "run the test suite with `make test` before pushing",
    ),
    ("We use pnpm, not npm, for the frontend.", "We use pnpm, not npm, for the frontend!"),
    ("The CI pipeline runs on GitHub Actions.", "The CI pipeline runs on GitHub Actions"),
    ("Always run make lint before committing.", "Always run make lint before you commit."),
    (
        "The staging database is PostgreSQL 16 on port 5433.",
        "Staging database: PostgreSQL 16, port 5433.",
    ),
    (
        "Deploys go to Fly.io from the main branch.",
        "Deploys to Fly.io happen from the main branch.",
    ),
    (
        "Use ruff for linting and formatting Python code.",
        "Python code is linted and formatted with ruff.",
    ),
    (
        "The user prefers tabs over spaces in Go files.",
        "The user prefers tabs rather than spaces in Go files.",
    ),
    (
        "Database migrations live in the migrations/ folder.",
        "Database migrations are kept in the migrations/ folder.",
    ),
    ("Never commit the .env file.", "Never commit the .env file to the repository."),
    ("API errors are logged to stderr as JSON.", "API errors get logged as JSON to stderr."),
    (
        "The frontend is built with Vite and React 18.",
        "The frontend is built using Vite and React 18.",
    ),
    (
        "Integration tests need Docker running locally.",
        "Integration tests require Docker to be running locally.",
    ),
    (
        "Feature flags are read from LaunchDarkly at startup.",
        "At startup, feature flags are read from LaunchDarkly.",
    ),
    (
        "Code review needs two approvals before merge.",
        "Code review requires two approvals before merging.",
    ),
    (
        "The auth service issues JWTs that expire after 15 minutes.",
        "The auth service issues JWTs which expire after 15 minutes.",
    ),
    (
        "Prefer small pull requests with one change each.",
        "Prefer small pull requests, one change each.",
    ),
    ("Logs are shipped to Datadog by the sidecar.", "The sidecar ships logs to Datadog."),
)

DIFFERENT: tuple[tuple[str, str], ...] = (
    # a number
    ("The API listens on port 8080.", "The API listens on port 8081."),
    (
        "The staging database is PostgreSQL 16 on port 5433.",
        "The staging database is PostgreSQL 15 on port 5433.",
    ),
    ("JWTs expire after 15 minutes.", "JWTs expire after 60 minutes."),
    ("Keep the line length at 100 characters.", "Keep the line length at 120 characters."),
    ("Use Node 18 for the build.", "Use Node 20 for the build."),
    ("The retry limit for webhooks is 3 attempts.", "The retry limit for webhooks is 5 attempts."),
    (
        "Code review needs two approvals before a merge.",
        "Code review needs three approvals before a merge.",
    ),
    # a date
    ("The release freeze starts on Friday.", "The release freeze starts on Monday."),
    ("The v2 launch is planned for March.", "The v2 launch is planned for April."),
    ("The demo was moved to tomorrow.", "The demo was moved to today."),
    # a name
    ("We deploy the backend to Fly.io.", "We deploy the backend to AWS."),
    ("Alice owns the billing service.", "Bob owns the billing service."),
    (
        "The staging database is postgres on port 5432.",
        "The staging database is mysql on port 5432.",
    ),
    ("Use pytest for the Python tests.", "Use unittest for the Python tests."),
    ("The frontend is built with Vite.", "The frontend is built with webpack."),
    ("Errors are reported to Sentry.", "Errors are reported to Rollbar."),
    ("Config lives in settings.toml.", "Config lives in settings.yaml."),
    ("The default branch is main.", "The default branch is develop."),
    # a negation
    ("Run the migrations before deploying.", "Do not run the migrations before deploying."),
    (
        "The user wants emojis in commit messages.",
        "The user does not want emojis in commit messages.",
    ),
    ("Tests can run in parallel.", "Tests cannot run in parallel."),
    ("Cache the API responses.", "Never cache the API responses."),
    # another fact about the same subject
    ("The CI pipeline runs on GitHub Actions.", "The CI pipeline takes about eight minutes."),
    ("Use ruff for linting Python code.", "Use mypy in strict mode for Python code."),
    ("Integration tests need Docker running locally.", "Unit tests must not touch the network."),
    ("The user prefers tabs in Go files.", "The user prefers spaces in YAML files."),
    ("Deploys go to Fly.io from the main branch.", "Hotfixes are deployed from release branches."),
)
