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


# Schemathesis 4.32.5 re-reads a multipart body as the server receives it before calling an
# accepted "negative" case a failure (`_form_body_is_valid_as_sent`), but it keeps a file part's
# generated value (bytes), which its JSON Schema validator cannot read: every negative case of an
# upload that carries a file was reported as "schema-violating request accepted", whatever the
# other parts held (here: a description of digits, which is text on the wire). A file part is a
# binary string (`format: binary`), so it is read back as its text, as the other parts are. Cases
# whose sent parts really break the schema are still reported.
from schemathesis.specs.openapi import checks as _checks  # noqa: E402

_sent_form_fields = _checks._sent_form_fields


def _sent_form_fields_with_files(response, media_type):
    fields = _sent_form_fields(response, media_type)
    if fields is None or not any(None in texts for texts in fields.values()):
        return fields
    from email.parser import BytesParser
    from email.policy import HTTP

    content = response.request.body
    if isinstance(content, str):
        content = content.encode()
    content_type = response.request.headers.get("Content-Type", "")
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + content)
    files = {}
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        if part.get_filename() is not None and isinstance(payload, bytes):
            files.setdefault(part.get_param("name", header="content-disposition"), []).append(
                payload.decode(errors="replace")
            )
    return {
        name: [files[name].pop(0) if text is None and files.get(name) else text for text in texts]
        for name, texts in fields.items()
    }


_checks._sent_form_fields = _sent_form_fields_with_files
