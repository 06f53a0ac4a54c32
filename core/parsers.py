"""The API's JSON parser: DRF's, plus an answer for JSON nested too deeply to decode.

Python's decoder gives up on very deep nesting (``[[[[…`` a hundred thousand levels) with
``RecursionError``, which DRF's parser does not catch, so such a body was a 500. It is bad
input like any other: 400 ``parse_error``.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JSONBodyParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
