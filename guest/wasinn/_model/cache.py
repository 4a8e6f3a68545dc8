"""``ModelCache``: the one place wasinn keeps models it compiled for itself.

``GraphBuilder.build`` (identical graphs load once) and the ``wasinn.ops``
helpers (one small model per operation, dtype and rank) keep what they load
here, most recently used last, up to a bound. Eviction releases a model at
once (its own session's context, then its graph), unless the app still holds
the model (one that ``build`` returned) or a session of it: closing that
would break the app, so it is released when the app lets go of it, as any
model is. Nothing else refers to a model, so dropping the cache's reference
is what releases it (``Session.__del__``, then ``_Graph.__del__``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

from .model import Model


class ModelCache:
    """A bounded map of key to loaded model, least recently used evicted first.

    >>> cache = ModelCache(2)
    >>> cache.get("missing") is None
    True
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._models: OrderedDict[Hashable, Model] = OrderedDict()

    def get(self, key: Hashable) -> Model | None:
        """The open model kept under ``key``, now the most recently used; else ``None``."""
        model = self._models.get(key)
        if model is None:
            return None
        if model.closed:  # the app closed it: load again
            del self._models[key]
            return None
        self._models.move_to_end(key)
        return model

    def put(self, key: Hashable, model: Model) -> Model:
        """Keep ``model`` under ``key``, evicting the least recently used beyond the bound."""
        self._models[key] = model
        self._models.move_to_end(key)
        while len(self._models) > self.size:
            self._models.popitem(last=False)  # released now, unless the app holds it
        return model

    def clear(self) -> None:
        """Forget every model (releasing those nobody else holds); for tests."""
        self._models.clear()

    def __len__(self) -> int:
        return len(self._models)

    def keys(self) -> list[Hashable]:
        """The keys, least recently used first."""
        return list(self._models)

    def values(self) -> list[Model]:
        """The kept models, least recently used first."""
        return list(self._models.values())
