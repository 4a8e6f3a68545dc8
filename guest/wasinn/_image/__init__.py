"""Image files: one module per format, over the compiled codecs.

``core`` holds what every format shares (``ImageInfo``, the pixel limit;
the errors are in ``wasinn._errors``); ``jpeg``, ``png``, ``webp`` and ``ppm`` read and write their
format; ``exif`` finds the orientation. The public face is ``wasinn.image``.
"""
