"""Converting TFLite, TensorFlow and PyTorch models to OpenVINO IR (build time only).

The wasmtime host hands its OpenVINO backend the model as bytes in memory, and
OpenVINO reads only IR and ONNX that way: a ``.tflite`` or a TensorFlow ``.pb``
fails there with an opaque "Failed while accessing backend", and a PyTorch
module is Python code, not a file at all. So an app converts such models when
it is built, in its ``prepare.py``, and loads the IR with ``Model.load``.
build.sh runs ``prepare.py`` with this folder on PYTHONPATH, so::

    from convert import convert

    convert(models / "blazeface.tflite", models / "blazeface.xml")

What ``convert`` takes:

- a ``.tflite`` file (its tensor names become the IR's names);
- a TensorFlow SavedModel folder (or the ``saved_model.pb`` in it), or a frozen
  ``GraphDef`` ``.pb`` (node names; ``output=[...]`` picks the outputs). These
  use OpenVINO's own TensorFlow reader, which needs no TensorFlow install.
  Frozen graphs are tested with a ``GraphDef`` written field by field;
  SavedModel folders are untested: writing one needs TensorFlow itself
  (tensorflow-cpu 2.21.0 is a 274 MB wheel with 16 more dependencies), too
  much for the test toolchain;
- a ``torch.nn.Module`` with ``example_inputs``, or a
  ``torch.export.ExportedProgram``: exported with ``torch.export``, then read
  by OpenVINO. Inputs take the names of ``forward``'s parameters; outputs the
  keys of a returned ``dict`` (or namedtuple fields), else ``output`` for one
  tensor and ``output0``, ``output1``, ... for a tuple. ``output_names``
  overrides them.

ONNX files and IR need no conversion: ``Model.load`` reads them directly.

Names matter because a wasinn app passes inputs and reads outputs by name.
After converting, ``convert`` gives every input and output exactly one name: the
model's own (TFLite tensor names, ``forward``'s parameters, a TF node's name
where OpenVINO says "node:0"), or ``input0``/``output0``... where it has none.
Then it reads the saved IR back and checks that those names survived.

From a shell (paths only)::

    PYTHONPATH=tools .venv/bin/python -m convert model.tflite build/models/model.xml
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tflite_file
from tflite_custom_ops import BUILT_IN, Translation

#: Endings ``Model.load`` reads as they are.
_DIRECT = {".onnx": "ONNX", ".xml": "OpenVINO IR"}
#: Endings of other formats, with what to do instead.
_ADVICE = {
    ".h5": "a Keras file: export it as a SavedModel (model.export(DIR)) or to .tflite, "
    "then convert that",
    ".keras": "a Keras file: export it as a SavedModel (model.export(DIR)) or to .tflite, "
    "then convert that",
    ".pt": "a PyTorch file: load the module in Python and pass it with example_inputs=(...)",
    ".pth": "a PyTorch file: load the module in Python and pass it with example_inputs=(...)",
    ".bin": "probably IR weights: convert the model, not its weights (an IR .xml loads directly)",
}


class ConversionError(Exception):
    """A model ``convert`` cannot turn into IR, with what to do about it.

    Example::

        try:
            convert("model.h5", out)
        except ConversionError as exc:
            print(exc)  # model.h5 is a Keras file: export it as a SavedModel ...
    """


def convert(
    model: str | os.PathLike[str] | Any,
    dest: str | os.PathLike[str],
    *,
    example_inputs: Sequence[Any] | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    custom_ops: Mapping[str, Translation | None] | None = None,
    **options: Any,
) -> Path:
    """Convert ``model`` to OpenVINO IR at ``dest`` (an ``.xml``; the ``.bin``
    goes beside it) and return ``dest``.

    ``model`` is a path (``.tflite``, frozen ``.pb``, SavedModel folder), a
    ``torch.nn.Module`` (put in eval mode; ``example_inputs``, a tuple of
    tensors, is required: it fixes the input shapes and dtypes), or a
    ``torch.export.ExportedProgram`` (shapes as exported, dynamic ones
    included). ``input_names`` and ``output_names``, in the converted model's
    order, replace the names ``convert`` would choose. Other keyword
    arguments go to ``openvino.convert_model`` (``input=`` to fix a TF
    graph's shapes, ``output=`` to choose a frozen graph's outputs).

    ``custom_ops`` gives a TFLite model's custom operators, by name, the
    translations OpenVINO lacks: ``translate(context, options)`` gets
    OpenVINO's ``NodeContext`` and that occurrence's own options bytes (see
    ``tools/tflite_custom_ops.py``, which also holds those ``convert`` knows
    already, such as MediaPipe's ``Convolution2DTransposeBias``; ``None``
    for a name turns a built-in one off).

    Weights are kept in f32 (``save_model`` would halve them to f16 by
    default, changing the answers). The IR is written under temporary names
    and renamed into place, so a failed or interrupted run leaves no half
    model. Raises ``ConversionError`` with the reason and what to do.

    Example, in an app's ``prepare.py``::

        import torch
        from convert import convert

        class Scale(torch.nn.Module):
            def forward(self, image):
                return {"scaled": image * 2.0}

        convert(Scale(), models / "scale.xml", example_inputs=(torch.zeros(1, 3, 8, 8),))
        # -> scale.xml + scale.bin: input "image" f32[1, 3, 8, 8], output "scaled"
    """
    ov = _openvino()
    dest = Path(dest)
    if dest.suffix != ".xml":
        raise ConversionError(f"write IR to an .xml path (its .bin goes beside it), not {dest}")
    if isinstance(model, (str, os.PathLike)):
        if example_inputs is not None:
            raise ConversionError("example_inputs is for PyTorch modules; a model file has its own")
        ov_model, wanted_in, wanted_out, label = _from_path(ov, Path(model), options, custom_ops)
    else:
        if custom_ops:
            raise ConversionError("custom_ops is for TFLite models; a PyTorch module has none")
        ov_model, wanted_in, wanted_out, label = _from_torch(ov, model, example_inputs, options)
    inputs = _name_ports(ov_model.inputs, input_names or wanted_in, "input", label)
    outputs = _name_ports(ov_model.outputs, output_names or wanted_out, "output", label)
    _save(ov, ov_model, dest)
    _check_saved(ov, dest, inputs, outputs)
    return dest


def _openvino() -> Any:
    try:
        import openvino
    except ImportError:
        raise ConversionError(
            "openvino is not installed in this Python; converting needs it "
            "(pip install openvino==2026.4.1, as in requirements-dev.txt)"
        ) from None
    return openvino


def _from_path(
    ov: Any, path: Path, options: dict[str, Any], custom_ops: Mapping[str, Any] | None = None
) -> tuple[Any, list[str] | None, list[str] | None, str]:
    label = path.name
    if not path.exists():
        raise ConversionError(f"model not found: {path}")
    if path.is_dir():
        if custom_ops:
            raise ConversionError(f"custom_ops is for TFLite models, and {label} is not one")
        if not (path / "saved_model.pb").is_file():
            raise ConversionError(
                f"{path} is a folder without saved_model.pb; pass a TensorFlow SavedModel "
                "folder, or a model file (.tflite, .pb)"
            )
        return _read(ov, path, label, options), None, None, label
    ext = path.suffix.lower()
    if ext in _DIRECT:
        raise ConversionError(
            f"{label} is {_DIRECT[ext]}, which Model.load reads directly: copy it, "
            "no conversion is needed"
        )
    if ext in _ADVICE:
        raise ConversionError(f"{label} is {_ADVICE[ext]}")
    with path.open("rb") as f:
        head = f.read(8)
    if head[4:8] == b"TFL3" or ext == ".tflite":
        data = path.read_bytes()
        names = tflite_names(data, label)
        try:
            found = tflite_file.custom_ops(data, label)
        except tflite_file.TFLiteError as exc:
            raise ConversionError(str(exc)) from None
        translations = {**BUILT_IN, **(custom_ops or {})}
        extensions = _custom_extensions(ov, found, translations, label)
        if extensions:
            given = options.get("extension")
            given = [] if given is None else list(given) if isinstance(given, list) else [given]
            options = {**options, "extension": given + extensions}
        untranslated = sorted({op.name for op in found if translations.get(op.name) is None})
        return _read(ov, path, label, options, untranslated), names[0], names[1], label
    if custom_ops:
        raise ConversionError(f"custom_ops is for TFLite models, and {label} is not one")
    if ext == ".pb":
        if path.name == "saved_model.pb":
            # OpenVINO reads a SavedModel as its folder (the variables are beside it).
            return _read(ov, path.parent, label, options), None, None, label
        return _read(ov, path, label, options), None, None, label
    raise ConversionError(
        f"{label}: cannot tell what kind of model this is; convert takes a .tflite file, "
        "a TensorFlow SavedModel folder or frozen .pb, or a PyTorch module"
    )


def _read(
    ov: Any, source: Any, label: str, options: dict[str, Any], untranslated: Sequence[str] = ()
) -> Any:
    try:
        return ov.convert_model(source, **options)
    except Exception as exc:
        text = str(exc)
        # A translation's own ConversionError comes back wrapped by OpenVINO,
        # with a traceback after it: give its message alone.
        ours = re.search(r"ConversionError: (.*?)(?:\s+At:|$)", text, re.S)
        if ours:
            raise ConversionError(ours.group(1).strip()) from exc
        # OpenVINO's message starts with where its check failed; the reason
        # (e.g. "No translator found for X node.") comes after: keep it all.
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        why = " ".join(lines).rstrip(".") or type(exc).__name__
        advice = ""
        if untranslated:
            advice = (
                f". {label}'s custom operators without a translation here: "
                f"{', '.join(untranslated)} (OpenVINO translates a few itself, such as "
                "TFLite_Detection_PostProcess); give the ones it names a translation with "
                "convert(..., custom_ops={name: translate}) (see tools/tflite_custom_ops.py)"
            )
        raise ConversionError(f"OpenVINO could not convert {label}: {why}{advice}") from exc


def _custom_extensions(
    ov: Any, found: Sequence[tflite_file.CustomOp], translations: Mapping[str, Any], label: str
) -> list[Any]:
    """An OpenVINO ConversionExtension per custom operator with a translation,
    handing it the options of the occurrence being converted."""
    from openvino.frontend import ConversionExtension

    extensions = []
    for name in sorted({op.name for op in found if translations.get(op.name) is not None}):
        occurrences = [op for op in found if op.name == name]
        extensions.append(
            ConversionExtension(name, _with_options(name, translations[name], occurrences, label))
        )
    return extensions


def _with_options(
    name: str, translate: Translation, occurrences: list[tflite_file.CustomOp], label: str
) -> Any:
    """``translate`` as OpenVINO calls it (a NodeContext only), with the options
    of the occurrence at hand: the one whose input tensors it is given, when
    the occurrences' options differ."""
    distinct = {op.options for op in occurrences}

    def call(context: Any) -> list[Any]:
        if len(distinct) == 1:
            options = occurrences[0].options
        else:
            given = set()
            for i in range(context.get_input_size()):
                given |= set(context.get_input(i).get_names())
            matches = {op.options for op in occurrences if given & set(op.inputs)}
            if len(matches) != 1:
                raise ConversionError(
                    f"{label} has {len(occurrences)} {name} operators with different options, "
                    "and convert cannot tell which one OpenVINO is converting"
                )
            (options,) = matches
        try:
            return translate(context, options)
        except ValueError as exc:
            raise ConversionError(f"{label}: {exc}") from None

    return call


def _from_torch(
    ov: Any, model: Any, example_inputs: Sequence[Any] | None, options: dict[str, Any]
) -> tuple[Any, list[str] | None, list[str] | None, str]:
    torch = sys.modules.get("torch")
    if torch is None:
        raise ConversionError(
            f"cannot convert a {type(model).__name__}: convert takes a path (.tflite, .pb, "
            "SavedModel folder), a torch.nn.Module or a torch.export.ExportedProgram"
        )
    if isinstance(model, torch.export.ExportedProgram):
        if example_inputs is not None:
            raise ConversionError("an ExportedProgram has its inputs already; drop example_inputs")
        program = model
    elif isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise ConversionError(
                f"converting a {type(model).__name__} needs example_inputs=(tensor, ...): "
                "torch.export traces forward() with them"
            )
        if not isinstance(example_inputs, tuple):
            example_inputs = tuple(example_inputs)
        try:
            program = torch.export.export(model.eval(), example_inputs)
        except Exception as exc:
            raise ConversionError(
                f"torch.export could not export {type(model).__name__}: {exc}"
            ) from exc
    else:
        raise ConversionError(
            f"cannot convert a {type(model).__name__}: convert takes a path (.tflite, .pb, "
            "SavedModel folder), a torch.nn.Module or a torch.export.ExportedProgram"
        )
    label = type(model).__name__
    ov_model = _read(ov, program, label, options)
    user_inputs = list(program.graph_signature.user_inputs)
    # OpenVINO leaves an exported program's inputs fully dynamic; give them the
    # shapes torch.export recorded (a symbolic dimension stays dynamic).
    shapes = {}
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            val = node.meta.get("val")
            if val is not None and hasattr(val, "shape"):
                dims = [d if isinstance(d, int) else -1 for d in val.shape]
                shapes[node.name] = ov.PartialShape(dims)
    if shapes and "input" not in options:
        by_port = {}
        for port in ov_model.inputs:
            names = port.get_names()
            for name in shapes:
                if name in names:
                    by_port[port] = shapes[name]
        ov_model.reshape(by_port)
    return ov_model, user_inputs, _torch_output_names(program), label


def _torch_output_names(program: Any) -> list[str] | None:
    spec = program.call_spec.out_spec
    if spec is None:
        return None
    names: list[str] = []

    def walk(node: Any, path: list[str]) -> None:
        children = list(node.children()) if getattr(node, "num_children", 0) else []
        if not children:
            names.append(".".join(path))
            return
        context = node.context
        if isinstance(context, (list, tuple)) and len(context) == len(children):
            keys = [str(k) for k in context]  # a dict's keys
        elif isinstance(getattr(context, "_fields", None), tuple):
            keys = [str(k) for k in context._fields]  # a namedtuple's class
        else:
            keys = [str(i) for i in range(len(children))]
        for key, child in zip(keys, children, strict=True):
            walk(child, path + [key])

    walk(spec, [])
    if names == [""]:
        return ["output"]
    # Positional names of a top-level tuple read better with a stem.
    return [f"output{n}" if n[:1].isdigit() else n for n in names]


def _name_ports(
    ports: Sequence[Any], wanted: Sequence[str] | None, kind: str, label: str
) -> list[str]:
    """Give each port one name: ``wanted`` (matched by name, else by position),
    or the best the converter gave, or ``kind`` + its index."""
    if wanted is not None and len(wanted) != len(ports):
        raise ConversionError(
            f"{label} converted to {len(ports)} {kind}s, but {len(wanted)} {kind} names were "
            f"given or expected ({', '.join(wanted)})"
        )
    chosen: list[str] = []
    given = [set(p.get_names()) for p in ports]
    if wanted is not None and all(sum(w in g for g in given) == 1 for w in wanted):
        order = {w: i for i, g in enumerate(given) for w in wanted if w in g}
        wanted = sorted(wanted, key=lambda w: order[w])
    for i, names in enumerate(given):
        if wanted is not None and wanted[i]:
            chosen.append(wanted[i])
        elif names:
            # TensorFlow names a node's first output "node:0"; the node's own name is
            # the one people know and feed.
            plain = names | {n[:-2] for n in names if n.endswith(":0") and len(n) > 2}
            chosen.append(min(plain, key=lambda n: (":" in n, len(n), n)))
        else:
            chosen.append(f"{kind}{i}")
    if len(set(chosen)) != len(chosen):
        raise ConversionError(
            f"{label}'s {kind}s would share a name ({', '.join(chosen)}); "
            f"pass {kind}_names=[...] with distinct names"
        )
    for port, name in zip(ports, chosen, strict=True):
        port.get_tensor().set_names({name})
    return chosen


def _save(ov: Any, ov_model: Any, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".convert-") as tmp:
        xml = Path(tmp) / "model.xml"
        ov.save_model(ov_model, xml, compress_to_fp16=False)
        # Weights first: an .xml in place means its .bin is too.
        xml.with_suffix(".bin").replace(dest.with_suffix(".bin"))
        xml.replace(dest)


def _check_saved(ov: Any, dest: Path, inputs: list[str], outputs: list[str]) -> None:
    saved = ov.Core().read_model(dest)
    got_in = [sorted(p.get_names()) for p in saved.inputs]
    got_out = [sorted(p.get_names()) for p in saved.outputs]
    if got_in != [[n] for n in inputs] or got_out != [[n] for n in outputs]:
        raise ConversionError(
            f"the names did not survive saving {dest.name}: wanted inputs {inputs} and "
            f"outputs {outputs}, the IR has {got_in} and {got_out}"
        )


def tflite_names(data: bytes, label: str = "the model") -> tuple[list[str], list[str]]:
    """The input and output tensor names of a TFLite model's first subgraph,
    read from its flatbuffer (the names LiteRT's interpreter reports).

    Example::

        tflite_names(Path("blazeface.tflite").read_bytes())
        # (['input'], ['regressors', 'classificators'])
    """
    try:
        return tflite_file.tensor_names(data, label)
    except tflite_file.TFLiteError as exc:
        raise ConversionError(str(exc)) from None


def main(argv: list[str]) -> int:
    """``python -m convert MODEL OUT.xml``: convert a model file; one line on error."""
    if len(argv) != 2:
        print("usage: python -m convert MODEL(.tflite|.pb|SAVEDMODEL_DIR) OUT.xml", file=sys.stderr)
        return 2
    try:
        out = convert(argv[0], argv[1])
    except ConversionError as exc:
        print(f"convert: {exc}", file=sys.stderr)
        return 1
    print(f"convert: wrote {out} and {out.with_suffix('.bin').name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
