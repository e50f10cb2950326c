# syntax=docker/dockerfile:1
# xclaw gateway image.
#   docker build -t xclaw .                          # the gateway
#   docker build -t xclaw:chromium --target with-chromium .   # + Debian's Chromium (browser tools)
# Run: a token file is required (the gateway listens on 0.0.0.0 in the container):
#   docker run -p 127.0.0.1:8787:8787 -v xclaw-data:/data -v "$PWD:/workspace" \
#     -v "$PWD/secrets/xclaw_token:/run/secrets/xclaw_token:ro" xclaw
# See compose.yaml for PostgreSQL + Redis (several instances).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# -- build: the package and its dependencies in a venv -----------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m venv /opt/xclaw \
    && /opt/xclaw/bin/pip install --no-cache-dir .

# -- base: what every runtime image holds --------------------------------------------------------
FROM ${PYTHON_IMAGE} AS base
# git, ripgrep, bubblewrap: the agent's tools use them for real; tini: PID 1 that forwards
# SIGTERM to xclaw (which drains) and reaps the commands the agent ran.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ripgrep bubblewrap tini ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 xclaw \
    && useradd --system --uid 10001 --gid xclaw --home-dir /home/xclaw --create-home \
       --shell /usr/sbin/nologin xclaw \
    && mkdir -p /data /workspace /config \
    && chown xclaw:xclaw /data /workspace /config
COPY --from=build /opt/xclaw /opt/xclaw
# Sessions (SQLite when no XCLAW_DATABASE_URL), the gateway's job store and run outputs live
# in XDG_DATA_HOME=/data; the user config (xclaw.yaml: model, gateway.redis_url ...) in /config.
ENV PATH=/opt/xclaw/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    XDG_DATA_HOME=/data \
    XDG_CONFIG_HOME=/config \
    XCLAW_LOG_FORMAT=json
VOLUME ["/data"]
WORKDIR /workspace
USER 10001:10001
EXPOSE 8787
# Liveness only; readiness (store, Redis, not draining) is GET /readyz for a load balancer.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8787/healthz', timeout=4)"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["tini", "--", "xclaw", "serve"]
# The token file must exist (a secret or a mounted file): xclaw refuses a non-loopback address
# without one. Running turns get --drain-timeout seconds after SIGTERM; keep the orchestrator's
# stop grace period longer than that.
CMD ["--host", "0.0.0.0", "--port", "8787", "-C", "/workspace", \
     "--token-file", "/run/secrets/xclaw_token", "--drain-timeout", "25"]

# -- with-chromium: + Debian's Chromium for the browser tools (/usr/bin/chromium) ----------------
FROM base AS with-chromium
USER 0
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium fonts-liberation \
    && rm -rf /var/lib/apt/lists/*
USER 10001:10001

# -- runtime: the default target -----------------------------------------------------------------
FROM base AS runtime
