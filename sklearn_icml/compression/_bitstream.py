"""The versioned container of a coded sweep: header, raw bytes, range-coder words.

Layout (little endian)::

    magic    4s   b"SLC1"
    kind     B    which codec wrote it (1 SerLiC, 2 adaptive context)
    flags    B    bit 0: origin points stored raw
    n_points I    points of the sweep (the geometry the decoder must be given)
    n_lasers H
    n_azimuth I
    window   I    points per window (SerLiC), 0 otherwise
    n_raw    I    reflectances stored raw (points at the origin)
    n_words  I    uint32 words of the range coder
    crc32    I    CRC-32 of the reflectance bytes in the caller's point order
    fingerprint 16s  first 16 bytes of the codec's SHA-256 fingerprint
    raw      n_raw bytes
    words    4 * n_words bytes
"""

import struct
import zlib
from dataclasses import dataclass

import numpy as np

MAGIC = b"SLC1"
KIND_SERLIC = 1
KIND_ADAPTIVE = 2
KIND_NAMES = {KIND_SERLIC: "SerLiCCodec", KIND_ADAPTIVE: "AdaptiveContextCodec"}
FLAG_RAW_ORIGIN = 1
_HEADER = struct.Struct("<4sBBIHIIIII16s")
HEADER_SIZE = _HEADER.size


def crc32(values):
    """CRC-32 of a uint8 array's bytes."""
    return zlib.crc32(np.ascontiguousarray(values, dtype=np.uint8).tobytes()) & 0xFFFFFFFF


@dataclass(frozen=True)
class Header:
    kind: int
    flags: int
    n_points: int
    n_lasers: int
    n_azimuth: int
    window: int
    n_raw: int
    n_words: int
    crc32: int
    fingerprint: bytes


def pack(header, raw, words):
    """Serialise a header, the raw reflectance bytes and the coder's words to bytes."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    words = np.ascontiguousarray(words, dtype="<u4")
    head = _HEADER.pack(
        MAGIC, header.kind, header.flags, header.n_points, header.n_lasers, header.n_azimuth,
        header.window, raw.shape[0], words.shape[0], header.crc32, header.fingerprint[:16],
    )
    return head + raw.tobytes() + words.tobytes()


def unpack(blob, *, kind):
    """Parse ``blob`` into ``(header, raw, words)``; ValueError on any malformed part."""
    if not isinstance(blob, bytes | bytearray | memoryview):
        raise TypeError(f"blob must be bytes. Got {type(blob).__name__} instead.")
    blob = bytes(blob)
    if len(blob) < HEADER_SIZE or blob[:4] != MAGIC:
        raise ValueError(
            f"blob is not a reflectance stream of this library: it must start with the "
            f"magic {MAGIC!r} and a {HEADER_SIZE}-byte header. Got {blob[:8]!r} "
            f"({len(blob)} bytes) instead."
        )
    fields = _HEADER.unpack_from(blob)
    header = Header(*fields[1:])
    if header.kind != kind:
        raise ValueError(
            f"blob was written by {KIND_NAMES.get(header.kind, f'kind {header.kind}')}, "
            f"not by {KIND_NAMES[kind]}; decode it with the codec that wrote it."
        )
    expected = HEADER_SIZE + header.n_raw + 4 * header.n_words
    if len(blob) != expected:
        raise ValueError(
            f"blob is truncated or padded: its header announces {expected} bytes. Got "
            f"{len(blob)} bytes instead."
        )
    raw = np.frombuffer(blob, dtype=np.uint8, count=header.n_raw, offset=HEADER_SIZE).copy()
    words = np.frombuffer(
        blob, dtype="<u4", count=header.n_words, offset=HEADER_SIZE + header.n_raw
    ).astype(np.uint32)
    return header, raw, words
