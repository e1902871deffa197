"""WhiteNoise in both middleware modes.

WhiteNoise's middleware is synchronous only, and one such middleware near the top of
the stack made Django run every request's middleware in a thread, with a hop back to
the event loop and into a thread again for the view. Its lookup is a dictionary read
(a file-system check with autorefresh, in development), so it runs on the event loop.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware  # type: ignore[import-untyped]


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(get_response, *args, **kwargs)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._async_call(request)
        return super().__call__(request)

    async def _async_call(self, request: HttpRequest) -> Any:
        path = request.path_info
        static_file = self.find_file(path) if self.autorefresh else self.files.get(path)
        if static_file is not None:
            return self.serve(static_file, request)
        return await self.get_response(request)
