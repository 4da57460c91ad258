"""streamx's MDS encodings under mosaicml-streaming's ``streaming.base.format.mds.encodings``
names (``streamx.base.format.mds.encodings`` re-exports them).

``_encodings`` is the very table streamx's writers and readers consult, so an encoding
registered here (``_encodings['complex128'] = Complex128``) works everywhere in streamx.
"""

from streamx.format.encodings import (
    JPEG,
    JSON,
    PIL,
    PNG,
    Bytes,
    Encoding,
    ImageList,
    Int,
    JPEGArray,
    Pickle,
    Scalar,
    Str,
    StrDecimal,
    StrFloat,
    StrInt,
    _encodings,
    get_mds_encoded_size,
    get_mds_encodings,
    is_mds_encoding,
    is_mds_encoding_safe,
    mds_decode,
    mds_encode,
)
from streamx.format.ndarray import NDArray

__all__ = [
    "JPEG",
    "JSON",
    "PIL",
    "PNG",
    "Bytes",
    "Encoding",
    "Float16",
    "Float32",
    "Float64",
    "Int",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "JPEGArray",
    "JPEGList",
    "List",
    "NDArray",
    "PILList",
    "PNGList",
    "Pickle",
    "Scalar",
    "Str",
    "StrDecimal",
    "StrFloat",
    "StrInt",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "_encodings",
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
]

# mosaic's class names for the encodings streamx builds from one template.
UInt8 = _encodings["uint8"]
UInt16 = _encodings["uint16"]
UInt32 = _encodings["uint32"]
UInt64 = _encodings["uint64"]
Int8 = _encodings["int8"]
Int16 = _encodings["int16"]
Int32 = _encodings["int32"]
Int64 = _encodings["int64"]
Float16 = _encodings["float16"]
Float32 = _encodings["float32"]
Float64 = _encodings["float64"]
List = ImageList
PILList = _encodings["list[pil]"]
JPEGList = _encodings["list[jpeg]"]
PNGList = _encodings["list[png]"]
