"""Loaded by Schemathesis in the fuzz campaign (scripts/fuzz/run sets SCHEMATHESIS_HOOKS).

CPython 3.11 (before 3.11.9) counts the recursion depth of its AST builder in state shared by
threads, so two threads parsing Python source at once can fail with "SystemError: AST
constructor recursion depth mismatch". Hypothesis parses source to describe its filters, and
Schemathesis's workers are threads: the campaign reported that error as a "Runtime Error" of an
operation, which is about neither the server nor the request. One parse at a time avoids it.
"""

import ast
import threading

_lock = threading.Lock()
_parse = ast.parse


def _serial_parse(*args, **kwargs):
    with _lock:
        return _parse(*args, **kwargs)


ast.parse = _serial_parse
