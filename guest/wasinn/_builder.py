"""``GraphBuilder``: describe array math in the guest, let the host compute it.

The builder follows the W3C WebNN ``MLGraphBuilder``: the same operations
(snake_case names), arguments, options and defaults, with shapes and dtypes
checked as each operation is added. The operations are the graph layer's
(``_graph.operations.GraphOperations``); this class adds ``build``, which
hands the lowered graph to the model layer and loads it like any model.

Example::

    from wasinn import GraphBuilder, Tensor

    b = GraphBuilder()
    x = b.input("x", shape=[None, 10], dtype="f32")
    model = b.build({"probs": b.softmax(x, axis=1), "best": b.arg_max(x, axis=1)})
    out = model.run({"x": logits})
"""

from __future__ import annotations

from collections.abc import Mapping

from ._graph.core import Lowered, Operand, Size, lower
from ._graph.operations import GraphOperations
from ._host.host import default_host
from ._model.cache import ModelCache
from ._model.model import Model, load
from ._model.prepare import prepare_graph

__all__ = ["GraphBuilder", "Operand", "Size"]

#: Built models kept per component instance, by their ONNX bytes.
_built = ModelCache(32)


class GraphBuilder(GraphOperations):
    """Builds a graph of tensor operations that the host compiles and runs.

    See the module docstring of ``wasinn._builder`` and ``docs/builder.md``
    for every operation and how it differs from WebNN.

    Example::

        b = GraphBuilder()
        image = b.input("image", shape=[480, 640, 3], dtype="u8")
        scaled = b.cast(image, "f32") / 255.0
        model = b.build({"scaled": scaled})
    """

    def build(self, outputs: Mapping[str, Operand]) -> Model:
        """Compile the graph into a ``Model`` whose outputs carry the given names.

        The model runs like any other (``run``, ``inputs``, ``outputs``,
        ``close``). Building an identical graph again in the same component
        returns the model loaded the first time (unless it was closed), so a
        helper may build its graph on every call and pay only once.

        Example::

            b = GraphBuilder()
            x = b.input("x", shape=[None, 4], dtype="f32")
            model = b.build({"probs": b.softmax(x, axis=1)})
            model.run({"x": Tensor([[1.0, 2.0, 3.0, 4.0]])})["probs"]
        """
        lowered = lower(self, outputs)
        data = lowered.onnx()
        return _built.get(data) or _built.put(data, _load(lowered, data))


def load_graph(builder: GraphOperations, outputs: Mapping[str, Operand]) -> Model:
    """A new model computing ``outputs`` of ``builder``, loaded on the default
    host (for callers that keep models under keys of their own: ``wasinn.ops``)."""
    lowered = lower(builder, outputs)
    return _load(lowered, lowered.onnx())


def _load(lowered: Lowered, data: bytes) -> Model:
    return load(prepare_graph(lowered, data), default_host())
