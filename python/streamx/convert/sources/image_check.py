"""Checking that an image's bytes decode before they are stored as they are.

Image inputs are written without a re-encode, so a truncated or corrupt file would reach the
dataset and fail only when a training run reads it. Each one is decoded first: a JPEG at 1/8
scale (its decoder still reads the whole entropy-coded stream, at a fraction of the cost),
anything else in full.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image

from streamx.convert.errors import ConvertError

__all__ = ["check_image"]


def check_image(data: bytes, where: str) -> None:
    """Raises :class:`ConvertError` naming ``where`` when ``data`` is no decodable image."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                if image.format == "JPEG":
                    image.draft("RGB", (max(image.width // 8, 1), max(image.height // 8, 1)))
                image.load()
    except Exception as err:
        raise ConvertError(
            f"Image {where} does not decode ({type(err).__name__}: {err}); fix or remove it."
        ) from err
