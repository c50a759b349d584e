"""Canonical serialisation and hashing.

Everything that must be byte-identical across runs (observations, traces, snapshot hashes,
grades) goes through these functions: sorted keys, no insignificant whitespace, and for
observations ASCII-only output so that it fits a printable `gymnasium.spaces.Text`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

_NON_ASCII = re.compile(r"[^\x00-\x7e]")  # non-ASCII, and DEL (0x7f), which is not printable


def dumps(obj: Any) -> bytes:
    """Canonical JSON bytes (UTF-8, sorted keys). Raises ``TypeError`` on unserialisable data."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


def loads(data: bytes | str) -> Any:
    """Parse JSON (strict: rejects NaN, lone surrogates and invalid UTF-8)."""
    return orjson.loads(data)


def valid_text(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogates), so that JSON can hold it."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps_ascii(obj: Any) -> str:
    """Canonical JSON as an ASCII ``str``: non-ASCII characters become ``\\uXXXX`` escapes.

    orjson already escapes control characters, so the result only holds printable ASCII.
    """
    return ascii_text(dumps(obj))


def ascii_text(data: bytes) -> str:
    """Canonical JSON bytes (from :func:`dumps`) as the ASCII ``str`` :func:`dumps_ascii` gives."""
    text = data.decode()
    if text.isascii() and "\x7f" not in text:
        return text
    return _NON_ASCII.sub(_escape, text)


def digest(data: bytes) -> str:
    """A stable 128-bit hex digest (blake2b)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def hash_obj(obj: Any) -> str:
    """Digest of the canonical JSON of ``obj``."""
    return digest(dumps(obj))


def derive_seed(*parts: str | int) -> int:
    """A 63-bit integer seed derived from ``parts`` by hashing (never ``hash()``)."""
    raw = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big") >> 1
