"""The bridge's FastAPI app: ``GET /v1/models``, ``POST /v1/chat/completions`` and
``POST /v1/responses``.

Every request needs ``Authorization: Bearer <token>`` (``TokenGuard``, checked before
routing, so unknown paths answer 401 too). Errors answer in OpenAI's shape
(``xclaw.bridge.errors``). Parameters are judged before the model is asked (``params``): a
parameter that would be ignored is a 400 naming it. A streamed answer waits for the model's
first event before the response starts, so most failures still get a proper status code;
later failures arrive in the stream (an ``error`` chunk, which OpenAI clients raise as
``APIError``, or ``response.failed``).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from xclaw.bridge import responses
from xclaw.bridge.convert import to_model_request
from xclaw.bridge.errors import BridgeError, error_body, from_exception
from xclaw.bridge.params import model_settings, refuse_unsupported
from xclaw.bridge.reply import ChatStream, Completion, TokenCount, TurnSummary
from xclaw.bridge.responses_reply import ResponseHead, ResponseStream, whole_response
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
        refuse_unsupported(body.model_extra)
        if body.stream_options is not None:
            refuse_unsupported(body.stream_options.model_extra, "stream_options.")
        request = to_model_request(body, model_settings(body.settings(), entry.honoured, entry.id))
        completion = Completion.start(entry.id)
        if body.stream:
            include_usage = body.stream_options is not None and body.stream_options.include_usage
            chunks = ChatStream(completion, include_usage)
            return await _stream(entry, request, body.stops(), chunks, http)
        summary = await _whole(entry, request, body.stops(), http)
        if summary is None:
            return Response(status_code=_CLIENT_GONE)
        return JSONResponse(completion.whole(summary, entry.tokens(summary, request)))

    @app.post("/v1/responses")
    async def create_response(body: responses.ResponsesRequest, http: Request) -> Response:
        entry = _lookup(served, body.model)
        refuse_unsupported(body.model_extra)
        for prefix, extra in body.nested_parameters():
            refuse_unsupported(extra, prefix)
        asked = body.settings()
        settings = model_settings(asked, entry.honoured, entry.id, responses.WIRE_NAMES)
        request = responses.to_model_request(body, settings)
        head = ResponseHead.start(entry.id, body)
        if body.stream:
            return await _stream(entry, request, (), ResponseStream(head), http)
        summary = await _whole(entry, request, (), http)
        if summary is None:
            return Response(status_code=_CLIENT_GONE)
        return JSONResponse(whole_response(head, summary, entry.tokens(summary, request)))

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


class StreamShape(Protocol):
    """How one API format writes a streamed answer (``ChatStream``, ``ResponseStream``)."""

    def opening(self) -> Iterator[str]: ...

    def on(self, event: ModelEvent) -> Iterator[str]: ...

    def closing(self, turn: TurnSummary, tokens: TokenCount) -> Iterator[str]: ...

    def failed(self, err: BridgeError) -> Iterator[str]: ...


async def _whole(
    entry: ServedModel, request: ModelRequest, stop: Sequence[str], http: Request
) -> TurnSummary | None:
    """The whole answer; None when the client left while the request waited its turn."""
    summary = TurnSummary()
    try:
        async with entry.turn(request, stop) as events:
            if await http.is_disconnected():
                return None
            async for event in events:
                summary.add(event)
    except Exception as err:
        raise from_exception(err) from None
    return summary


async def _stream(
    entry: ServedModel,
    request: ModelRequest,
    stop: Sequence[str],
    shape: StreamShape,
    http: Request,
) -> Response:
    """Wait for a turn and the first event, then stream; the turn ends with the response."""
    stack = AsyncExitStack()
    try:
        events = await stack.enter_async_context(entry.turn(request, stop))
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
    body = _sse_body(first, events, shape, lambda turn: entry.tokens(turn, request))
    return _ClosingStream(body, stack, media_type="text/event-stream", headers=_SSE_HEADERS)


_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


async def _sse_body(
    first: ModelEvent | None,
    events: AsyncIterator[ModelEvent],
    shape: StreamShape,
    tokens: Callable[[TurnSummary], TokenCount],
) -> AsyncIterator[str]:
    summary = TurnSummary()
    for line in shape.opening():
        yield line
    event = first
    try:
        while event is not None:
            summary.add(event)
            for line in shape.on(event):
                yield line
            event = await anext(events, None)
    except Exception as err:
        for line in shape.failed(from_exception(err)):
            yield line
        return
    for line in shape.closing(summary, tokens(summary)):
        yield line


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
        message = (
            f"{err.detail}. The bridge serves GET /v1/models, POST /v1/chat/completions and "
            "POST /v1/responses."
        )
        return JSONResponse(
            error_body(message, "invalid_request_error", code),
            status_code=err.status_code,
            headers=err.headers,
        )

    app.add_exception_handler(BridgeError, bridge_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(HTTPException, http_error)


# Where a value may take one of several shapes, pydantic reports each shape it tried, labelled
# with the type; a scalar shape the client plainly did not send only adds noise.
_SCALAR_SHAPES = frozenset({"str", "int", "float", "bool", "none"})


def _describe_errors(err: RequestValidationError) -> str:
    """Where and what, never the offending values (they may hold secrets)."""
    found = err.errors()
    located = [(_where(item.get("loc", ())), item) for item in found]
    deep = [pair for pair in located if pair[0][-1:] != ["*"]] or located
    problems = []
    for loc, item in deep[:5]:
        if item.get("type") == "json_invalid":
            problems.append("the body is not valid JSON")
            continue
        problems.append(f"{'.'.join(loc) or 'body'}: {item.get('msg', 'invalid')}")
    more = len(deep) - len(problems)
    tail = f" (and {more} more)" if more > 0 else ""
    return "The request is not valid: " + "; ".join(problems) + tail + "."


def _where(loc: Sequence[Any]) -> list[str]:
    """A field path without pydantic's shape labels; ``*`` marks a scalar shape tried."""
    path: list[str] = []
    for part in loc:
        text = str(part)
        if text == "body" or "[" in text:
            continue
        path.append("*" if text in _SCALAR_SHAPES else text)
    return path
