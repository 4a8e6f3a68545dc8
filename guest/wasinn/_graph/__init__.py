"""The graph layer: operands and WebNN's operations, lowered to ONNX nodes.

``core`` holds operands, constants, shape checks and ``lower``; each other
module is one family of operations, mixed into ``operations.GraphOperations``.
This layer knows nothing of models or hosts: ``GraphBuilder.build`` (in
``wasinn._builder``) hands what ``lower`` produces to the model layer.
"""
