"""``GraphOperations``: every family of operations on one builder, without ``build``.

This is the whole graph layer as one class: what ``preprocess`` and
``postprocess`` get when ``Model.load`` fuses processing into a model, and
the base of the public ``GraphBuilder``, which adds ``build`` (loading the
graph as a model) one layer up.
"""

from __future__ import annotations

from .elementwise import ElementwiseFamily
from .network import NetworkFamily
from .pooling import PoolingFamily
from .recurrent import RecurrentFamily
from .reduce import ReductionFamily
from .shape import ShapeFamily


class GraphOperations(
    ElementwiseFamily,
    ShapeFamily,
    ReductionFamily,
    NetworkFamily,
    PoolingFamily,
    RecurrentFamily,
):
    """Every GraphBuilder operation; ``docs/builder.md`` lists them.

    Example (a fused pre-processing function gets one)::

        def pre(b):
            image = b.input("image", shape=[480, 640, 3], dtype="u8")
            return {"x": b.cast(image, "f32") / 255.0}
    """
