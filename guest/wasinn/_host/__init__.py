"""The host layer: wasi-nn, as plain Python values.

``api`` declares what a host does (``HostLayer``, the calls; ``HostOutput``);
``wasi`` makes those calls through the generated bindings; ``host`` wraps a
``HostLayer`` in the ``Host`` object a model holds, which also keeps what
wasinn learned about that host.
"""
