"""JPEGD's EXIF orientation: CANN's JPEGD reads a JPEG's Orientation tag (0x0112) and outputs
the picture rotated by 90, 180 or 270 degrees or mirrored, so the output is upright; strides
and buffer size are those of the rotated picture. A tag it cannot read leaves the picture as
stored. The transforms are Pillow's `ImageOps.exif_transpose` ones, done on the decoded array.
"""
from __future__ import annotations

import io

import numpy as np

from . import codec

ORIENTATION_TAG = 0x0112
SWAPS_SIDES = (5, 6, 7, 8)          # transpose, rotate 90 (either way), transverse


def orientation(data: bytes) -> int:
    """The JPEG's EXIF orientation, 1..8 (1: none, or unreadable)."""
    Image = codec.pil()
    try:
        with Image.open(io.BytesIO(data)) as im:
            value = im.getexif().get(ORIENTATION_TAG, 1)
    except Exception:                    # noqa: BLE001 - an unreadable tag: no rotation
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def upright(img: np.ndarray, value: int) -> np.ndarray:
    """`img` (h, w[, c]) turned as orientation `value` asks (Pillow's conventions)."""
    turned = {2: lambda a: a[:, ::-1],                       # mirror left-right
              3: lambda a: a[::-1, ::-1],                    # rotate 180
              4: lambda a: a[::-1],                          # mirror top-bottom
              5: lambda a: a.swapaxes(0, 1),                 # transpose
              6: lambda a: np.rot90(a, -1),                  # rotate 90 clockwise
              7: lambda a: a[::-1, ::-1].swapaxes(0, 1),     # transverse
              8: lambda a: np.rot90(a, 1)}.get(value)        # rotate 90 counter-clockwise
    return img if turned is None else np.ascontiguousarray(turned(img))
