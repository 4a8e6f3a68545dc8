"""A model's description read from a local copy, for ``Model.load_by_name``.

A model the host preloaded (``-S nn-graph=openvino::DIR``) comes with no
description at all. A copy of its IR ``.xml`` (the weights are not needed) or
of its ``.onnx`` gives wasinn the names, shapes, dtypes and metadata, so the
model's outputs get their real names and its inputs are checked.

>>> describe(b'<net name="m" version="11"><layers/></net>').inputs
[]
"""

from __future__ import annotations

import os

from .._errors import ValidationError
from . import ir, onnx_read
from .source import Resolved, Source, read_file, sniff


def describe(source: Source) -> Resolved:
    """The inputs, outputs and metadata that ``source`` declares: an IR ``.xml``
    or ``.onnx`` path, or its bytes (a list of parts: the first one). The
    result has no parts: nothing here is meant for the host."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        data = read_file(path, "model description")
        label = os.path.basename(path)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), "the model description"
    elif (
        isinstance(source, (list, tuple))
        and source
        and isinstance(source[0], (bytes, bytearray, memoryview))
    ):
        data, label = bytes(source[0]), "the model description"
    else:
        raise ValidationError(
            f"cannot read a model description from {type(source).__name__}; pass the path of "
            "the model's IR .xml or .onnx, or its bytes"
        )
    encoding = sniff(data, label)
    if encoding == "openvino":
        described = ir.read(data, label)
        states = described.states
        inputs, outputs, metadata = described.inputs, described.outputs, described.metadata
    else:
        onnx = onnx_read.read(data, label)
        states = []  # ONNX has no state variables
        inputs, outputs, metadata = onnx.inputs, onnx.outputs, onnx.metadata
    return Resolved([], encoding, label, inputs, outputs, metadata, states=states)
