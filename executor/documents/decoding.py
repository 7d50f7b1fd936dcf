"""Bytes to text: UTF-8, UTF-16 with a byte-order mark, or Korean CP949; None for binary data."""

from __future__ import annotations

import codecs

_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192] and not head.startswith(_BOMS)


def decode(data: bytes) -> str | None:
    """Text from bytes (UTF-8, UTF-16 with a BOM, or Korean CP949), or None for binary data."""
    if _looks_binary(data):
        return None
    for encoding in ("utf-8-sig", "utf-16", "cp949"):
        if encoding == "utf-16" and not data.startswith(_BOMS):
            continue
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return None


def decode_cut(data: bytes) -> str | None:
    """`decode` of bytes cut at a cap: the cut may have split the last character."""
    for trim in range(4):
        text = decode(data[: len(data) - trim])
        if text is not None:
            return text
    return None


def text_encoding(head: bytes) -> str | None:
    """The encoding `decode` would choose for a file that starts with `head`, for streaming it.

    `head` may end inside a character (a chunk of a larger file): an incomplete last character
    does not count against an encoding. None when the bytes are binary.
    """
    if _looks_binary(head):
        return None
    if head.startswith(_BOMS):
        return "utf-16"
    for encoding in ("utf-8-sig", "cp949"):
        try:
            codecs.getincrementaldecoder(encoding)().decode(head, final=False)
        except UnicodeDecodeError:
            continue
        return encoding
    return None
