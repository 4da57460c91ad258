"""Converters of computer-vision datasets to MDS.

Only :func:`streamx.vision.convert.base.convert_image_class_dataset` is mirrored from
``streaming.vision.convert``; upstream's per-dataset command-line scripts are not.
"""
