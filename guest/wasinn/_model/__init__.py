"""The model layer: preparing a model for the host, loading it, running it.

``prepare`` turns a source (with its processing ``fuse``d in) into a
``Prepared`` model without touching the host; ``model`` loads one on a host
and runs it; ``cache`` keeps the models wasinn builds for itself.
"""
