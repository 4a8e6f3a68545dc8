"""``GraphBuilder``: describe array math in the guest, let the host compute it.

The builder follows the W3C WebNN ``MLGraphBuilder``: the same operations
(snake_case names), arguments, options and defaults, with shapes and dtypes
checked as each operation is added. ``build`` lowers the graph to ONNX and
loads it into the host like any model. Each family of operations lives in its
own module (``_ops_*``); this class only puts them together.

Example::

    from wasinn import GraphBuilder, Tensor

    b = GraphBuilder()
    x = b.input("x", shape=[None, 10], dtype="f32")
    model = b.build({"probs": b.softmax(x, axis=1), "best": b.arg_max(x, axis=1)})
    out = model.run({"x": logits})
"""

from __future__ import annotations

from ._graph_core import Operand
from ._ops_elementwise import ElementwiseOps
from ._ops_nn import NetworkOps
from ._ops_pool import PoolingOps
from ._ops_reduce import ReduceOps
from ._ops_shape import ShapeOps

__all__ = ["GraphBuilder", "Operand"]


class GraphBuilder(ElementwiseOps, ShapeOps, ReduceOps, NetworkOps, PoolingOps):
    """Builds a graph of tensor operations that the host compiles and runs.

    See the module docstring of ``wasinn._builder`` and ``docs/builder.md``
    for every operation and how it differs from WebNN.

    Example::

        b = GraphBuilder()
        image = b.input("image", shape=[480, 640, 3], dtype="u8")
        scaled = b.cast(image, "f32") / 255.0
        model = b.build({"scaled": scaled})
    """
