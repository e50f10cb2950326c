"""The bridge's FastAPI app: ``GET /v1/models`` and ``POST /v1/chat/completions``.

Every request needs ``Authorization: Bearer <token>`` (``TokenGuard``, checked before
routing, so unknown paths answer 401 too). Errors answer in OpenAI's shape
(``xclaw.bridge.errors``). A streamed answer waits for the model's first event before the
response starts, so most failures still get a proper status code; later failures arrive as
an ``error`` chunk, which OpenAI clients raise as ``APIError``.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from xclaw.bridge.convert import to_model_request
from xclaw.bridge.errors import BridgeError, error_body, from_exception
from xclaw.bridge.reply import Completion, TurnSummary, sse
from xclaw.bridge.schema import ChatCompletionRequest
from xclaw.bridge.served import ServedModel
from xclaw.core.model import Model, ModelEvent, ModelRequest
from xclaw.redact import redact

__all__ = ["TokenGuard", "create_app"]

log = logging.getLogger("xclaw.bridge")


class TokenGuard:
    """ASGI middleware: 401 unless the request carries the bridge's bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            refusal = BridgeError(
                401,
                "BRIDGE_TOKEN_INVALID",
                "Missing or wrong bearer token.",
                hint="Send the token from the bridge's token file (its path is printed when "
                "the bridge starts) as a Bearer token in the Authorization header.",
                kind="authentication_error",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await refusal.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and secrets.compare_digest(
                    given.strip(), self._expected
                )
        return False


def create_app(models: Mapping[str, Model], token: str, *, queue: int = 8) -> FastAPI:
    """An app serving ``models`` by id; models are closed when the app shuts down."""
    served = {model_id: ServedModel(model_id, m, queue=queue) for model_id, m in models.items()}
    started = int(time.time())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await _close_all(served.values())

    app = FastAPI(
        title="xclaw bridge", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    app.state.served = served  # id -> ServedModel, for tests and diagnostics
    app.add_middleware(TokenGuard, token=token)
    _install_error_handlers(app)

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        return {"object": "list", "data": [_model_card(i, started) for i in served]}

    @app.get("/v1/models/{model_id:path}")
    async def get_model(model_id: str) -> dict[str, Any]:
        return _model_card(_lookup(served, model_id).id, started)

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest, http: Request) -> Response:
        entry = _lookup(served, body.model)
        request = to_model_request(body)
        completion = Completion.start(entry.id)
        if body.stream:
            include_usage = body.stream_options is not None and body.stream_options.include_usage
            return await _stream(entry, request, completion, include_usage, http)
        summary = TurnSummary()
        try:
            async with entry.turn(request) as events:
                if await http.is_disconnected():
                    return Response(status_code=_CLIENT_GONE)
                async for event in events:
                    summary.add(event)
        except Exception as err:
            raise from_exception(err) from None
        return JSONResponse(completion.whole(summary))

    return app


def _lookup(served: Mapping[str, ServedModel], model_id: str) -> ServedModel:
    entry = served.get(model_id)
    if entry is None:
        raise BridgeError(
            404,
            "BRIDGE_MODEL_UNKNOWN",
            f"The bridge serves no model {model_id!r}.",
            hint=f"Use one of: {', '.join(sorted(served))} (GET /v1/models).",
        )
    return entry


def _model_card(model_id: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "xclaw"}


# A client that left while its request waited for a serialised model is not answered: the
# model's time goes to the next one (499 as nginx logs it; nobody reads this answer).
_CLIENT_GONE = 499


async def _stream(
    entry: ServedModel,
    request: ModelRequest,
    completion: Completion,
    include_usage: bool,
    http: Request,
) -> Response:
    """Wait for a turn and the first event, then stream; the turn ends with the response."""
    stack = AsyncExitStack()
    try:
        events = await stack.enter_async_context(entry.turn(request))
        if await http.is_disconnected():
            await stack.aclose()
            return Response(status_code=_CLIENT_GONE)
        first = await anext(events, None)
    except Exception as err:
        await stack.aclose()
        raise from_exception(err) from None
    except BaseException:
        await stack.aclose()
        raise
    body = _sse_body(first, events, completion, include_usage)
    return _ClosingStream(body, stack, media_type="text/event-stream", headers=_SSE_HEADERS)


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def _sse_body(
    first: ModelEvent | None,
    events: AsyncIterator[ModelEvent],
    completion: Completion,
    include_usage: bool,
) -> AsyncIterator[str]:
    summary = TurnSummary()
    yield sse(completion.chunk({"role": "assistant", "content": ""}))
    event = first
    try:
        while event is not None:
            delta = completion.delta(event, len(summary.calls))
            summary.add(event)
            if delta is not None:
                yield sse(completion.chunk(delta))
            event = await anext(events, None)
    except Exception as err:
        yield sse(from_exception(err).body())
        return
    yield sse(completion.chunk({}, summary.finish_reason))
    usage = summary.usage()
    if include_usage and usage is not None:
        yield sse(completion.usage_chunk(usage))
    yield "data: [DONE]\n\n"


class _ClosingStream(StreamingResponse):
    """A stream that ends the model's turn (frees its queue slot) however the response ends:
    finished, client gone, or server shutting down."""

    def __init__(self, content: AsyncIterator[str], turn: AsyncExitStack, **kw: Any) -> None:
        super().__init__(content, **kw)
        self._turn = turn
        self._content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                close = getattr(self._content, "aclose", None)
                if close is not None:
                    await close()
                await self._turn.aclose()


async def _close_all(entries: Any) -> None:
    for entry in entries:
        try:
            await entry.model.aclose()
        except Exception as err:  # noqa: BLE001 - one model failing to close must not stop the rest
            log.warning("bridge: closing %s failed: %s", entry.id, redact(str(err)))


def _install_error_handlers(app: FastAPI) -> None:
    async def bridge_error(_: Request, err: Exception) -> Response:
        assert isinstance(err, BridgeError)
        return err.response()

    async def invalid_request(_: Request, err: Exception) -> Response:
        assert isinstance(err, RequestValidationError)
        return JSONResponse(
            error_body(_describe_errors(err), "invalid_request_error", "BRIDGE_REQUEST_INVALID"),
            status_code=400,
        )

    async def http_error(_: Request, err: Exception) -> Response:
        assert isinstance(err, HTTPException)
        code = "BRIDGE_ROUTE_UNKNOWN" if err.status_code in (404, 405) else "BRIDGE_HTTP_ERROR"
        message = f"{err.detail}. The bridge serves GET /v1/models and POST /v1/chat/completions."
        return JSONResponse(
            error_body(message, "invalid_request_error", code),
            status_code=err.status_code,
            headers=err.headers,
        )

    app.add_exception_handler(BridgeError, bridge_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)


def _describe_errors(err: RequestValidationError) -> str:
    """Where and what, never the offending values (they may hold secrets)."""
    problems = []
    for item in err.errors()[:5]:
        if item.get("type") == "json_invalid":
            problems.append("the body is not valid JSON")
            continue
        loc = [str(p) for p in item.get("loc", ()) if p != "body"]
        problems.append(f"{'.'.join(loc) or 'body'}: {item.get('msg', 'invalid')}")
    more = len(err.errors()) - len(problems)
    tail = f" (and {more} more)" if more > 0 else ""
    return "The request is not valid: " + "; ".join(problems) + tail + "."
