"""Model formats, read and written without protobuf or the host.

``onnx_read`` parses ONNX once per load; ``onnx_write`` and ``onnx_opsets``
write the ONNX the graph builder produces; ``ir`` reads OpenVINO IR XML;
``source`` turns what ``Model.load`` is given into parts and specs;
``describe`` reads a local copy for ``Model.load_by_name``; ``rewrite`` edits
a model around what the host cannot carry. Nothing here imports a layer
above it (see docs/architecture.md).
"""
