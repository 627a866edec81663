# memstrata as a streamable-HTTP MCP service on http://<host>:8765/mcp, database in /data.
#   docker build -t memstrata .
#   docker run --rm -p 127.0.0.1:8765:8765 -v memstrata-data:/data \
#     -v "$PWD/tokens.toml:/run/secrets/memstrata_tokens.toml:ro" \
#     -e MEMSTRATA_AUTH_TOKENS_FILE=/run/secrets/memstrata_tokens.toml memstrata
# It binds 0.0.0.0 inside the container, so bearer-token auth is required: without
# MEMSTRATA_AUTH_TOKENS or MEMSTRATA_AUTH_TOKENS_FILE the server refuses to start (fails fast).

# --- builder: turn the source tree into a wheel (the SQL migrations travel inside it) -------
FROM python:3.11-slim AS builder
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server ./server
COPY memory_core ./memory_core
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# --- runtime: the wheel and its dependencies, run as an unprivileged user -------------------
FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MEMSTRATA_DB=/data/memory.db
RUN useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin memstrata \
    && mkdir /data \
    && chown memstrata:memstrata /data
COPY --from=builder /dist/ /tmp/dist/
RUN pip install --no-cache-dir /tmp/dist/*.whl \
    && rm -rf /tmp/dist
USER 10001
WORKDIR /data
VOLUME /data
EXPOSE 8765
# A TCP probe: the MCP endpoint itself only answers full protocol requests.
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 8765), 2).close()"]
ENTRYPOINT ["memstrata"]
# No --insecure here: a public bind without a token must fail, never serve memories openly.
CMD ["serve", "--http", "--host", "0.0.0.0", "--port", "8765"]
