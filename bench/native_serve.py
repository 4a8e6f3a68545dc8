"""The server a Python user would write instead of apps/serve's /digits: Starlette
on uvicorn, Pillow and numpy for the image, OpenVINO with the model compiled once
at start-up. serve_bench.py measures it beside the component (case c).

    .venv/bin/python -m uvicorn native_serve:app --app-dir bench --port 8000
    curl -X POST -H 'content-type: image/png' --data-binary @apps/digits/samples/digit3_002.png \\
        localhost:8000/digits
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import openvino as ov
from PIL import Image, UnidentifiedImageError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MODEL = Path(__file__).resolve().parent.parent / "apps" / "digits" / "model" / "digits.xml"
MAX_BODY_BYTES = 1 << 20

compiled = ov.Core().compile_model(str(MODEL), "CPU")
request_queue = compiled.create_infer_request()
probs_output = compiled.output("probs")


async def digits(request: Request) -> JSONResponse:
    if request.headers.get("content-type", "").split(";")[0] not in ("image/png", "image/jpeg"):
        return JSONResponse({"error": "/digits takes image/png or image/jpeg"}, status_code=415)
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return JSONResponse({"error": "the body is over the limit"}, status_code=413)
    try:
        gray = Image.open(io.BytesIO(body)).convert("L")
    except (UnidentifiedImageError, OSError) as e:
        return JSONResponse({"error": str(e)}, status_code=400)
    if gray.size != (8, 8):
        return JSONResponse({"error": "the digits model reads 8x8 images"}, status_code=400)
    x = (np.asarray(gray, dtype=np.float32) / 255.0).reshape(1, 1, 8, 8)
    probs = request_queue.infer({"image": x})[probs_output][0]
    top = np.argsort(-probs, kind="stable")[:3]
    return JSONResponse({"top3": [{"digit": int(d), "probability": float(probs[d])} for d in top]})


app = Starlette(routes=[Route("/digits", digits, methods=["POST"])])
