"""IR metadata read by wasinn agrees with OpenVINO's own reading of the same files."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import models
import openvino as ov
import pytest

from wasinn import ModelFormatError
from wasinn._formats import ir as _ir
from wasinn._formats import source as _source

ROOT = Path(__file__).resolve().parent.parent


def ov_specs(ports: list[ov.Output]) -> list[tuple[str, tuple[int | None, ...] | None, str]]:
    out = []
    for p in ports:
        partial = p.get_partial_shape()
        dims = tuple(None if d.is_dynamic else d.get_length() for d in partial)
        shape = None if partial.rank.is_dynamic else dims
        out.append((p.get_any_name(), shape, p.get_element_type().get_type_name()))
    return out


def ir_paths(model_dir: Path) -> list[Path]:
    return sorted(model_dir.glob("*.xml")) + [ROOT / "apps/digits/model/digits.xml"]


def test_metadata_matches_openvino_read_model(model_dir: Path) -> None:
    core = ov.Core()
    paths = ir_paths(model_dir)
    assert len(paths) >= 10 and any(p.name == "any_rank.xml" for p in paths)
    for path in paths:
        info = _ir.read(path.read_bytes(), path.name)
        model = core.read_model(path)
        ours_in = [(s.name, s.shape, s.dtype) for s in info.inputs]
        ours_out = [(s.name, s.shape, s.dtype) for s in info.outputs]
        assert ours_in == ov_specs(model.inputs), path.name
        assert ours_out == ov_specs(model.outputs), path.name


def test_output_order_follows_document_order_not_ids(model_dir: Path, tmp_path: Path) -> None:
    """Moving Result layers in the file reorders OpenVINO's outputs; wasinn must follow."""
    xml = (model_dir / "two.xml").read_text()
    a, b, end = xml.index('<layer id="5"'), xml.index('<layer id="6"'), xml.index("</layers>")
    moved = xml[:a] + xml[b:end].rstrip() + "\n\t\t" + xml[a:b].strip() + "\n\t" + xml[end:]
    (tmp_path / "moved.xml").write_text(moved)
    (tmp_path / "moved.bin").write_bytes((model_dir / "two.bin").read_bytes())
    ov_order = [o.get_any_name() for o in ov.Core().read_model(tmp_path / "moved.xml").outputs]
    ours = [s.name for s in _ir.read(moved.encode()).outputs]
    assert ov_order == ["sum", "prod"] and ours == ov_order


def test_digits_metadata() -> None:
    info = _ir.read((ROOT / "apps/digits/model/digits.xml").read_bytes())
    assert [str(s) for s in info.inputs] == ["image: f32[?, 1, 8, 8]"]
    assert [str(s) for s in info.outputs] == ["logits: f32[?, 10]", "probs: f32[?, 10]"]
    assert info.weights_needed == (ROOT / "apps/digits/model/digits.bin").stat().st_size


@pytest.mark.parametrize(
    "xml,message",
    [
        (b"<net><layers>", "not valid OpenVINO IR XML"),
        (b"<?xml version='1.0'?><html/>", "root element is <html>"),
        (b"<net name='x'/>", "has no <layers>"),
        (b"", "not valid OpenVINO IR XML"),
        # Freeing a tree this deep would recurse in C and trap a component.
        (b"<net><layers/><rt_info>" + b"<a>" * 300_000 + b"</a>" * 300_000 + b"</rt_info></net>",
         "nests XML elements more than 50000 deep"),
    ],
)
def test_broken_ir_raises_model_format_error(xml: bytes, message: str) -> None:
    with pytest.raises(ModelFormatError, match=message):
        _ir.read(xml)


def test_escaped_comma_in_names() -> None:
    assert _ir._first_name("a\\,b,c") == "a,b"
    assert _ir._first_name("alpha,zeta") == "alpha"


# ---------------------------------------------------------------- rt_info -> metadata


def ov_metadata(rt_info: Any, prefix: str = "") -> dict[str, str]:
    """OpenVINO's get_rt_info() flattened as wasinn documents it: paths joined with "/"."""
    flat: dict[str, str] = {}
    for key in rt_info:
        value = rt_info[key]
        if isinstance(value, dict):
            flat.update(ov_metadata(value, f"{prefix}{key}/"))
        else:
            flat[prefix + key] = value.astype(str)
    return flat


def ov_read_xml(xml: str) -> ov.Model:
    """OpenVINO's reading of an IR document without weights, from memory as the host reads it."""
    return ov.Core().read_model(xml, ov.Tensor(ov.Type.u8, [0]))


def test_rt_info_matches_openvino_get_rt_info(model_dir: Path) -> None:
    core = ov.Core()
    for path in ir_paths(model_dir):
        ours = _ir.read(path.read_bytes(), path.name).metadata
        assert ours == ov_metadata(core.read_model(path).get_rt_info()), path.name
        assert ours["version"] == "11" and "OpenVINO Runtime" in ours, path.name


def test_rt_info_entries_set_by_set_rt_info(model_dir: Path) -> None:
    """Each value written with set_rt_info(value, path) reads back under the "/"-joined path."""
    path = model_dir / "rt_info.xml"
    meta = _ir.read(path.read_bytes()).metadata
    model = ov.Core().read_model(path)
    for _, key in models.RT_INFO:
        keys = [key] if isinstance(key, str) else key
        assert meta["/".join(keys)] == model.get_rt_info(keys).astype(str)
    assert meta["model_info/mean_values"] == "1,2,3" and meta["a/b"] == "v"
    assert meta["a/c/d"] == "deep" and meta["naïve key"] == "ünïcode ✓"
    assert meta["escaped"] == 'needs <escaping> & "quotes"\n\ttoo'
    assert (meta["number"], meta["list"], meta["empty"]) == ("7", "1 2 3", "")
    # Through Model.load's source resolution too, from a path, bytes and parts.
    assert _source.resolve(path, None).metadata == meta
    parts = [path.read_bytes(), path.with_suffix(".bin").read_bytes()]
    assert _source.resolve(parts, None).metadata == meta
    assert _source.resolve(parts[0], "openvino").metadata == meta


def test_models_without_metadata_resolve_to_an_empty_dict() -> None:
    # Formats wasinn does not read carry no metadata, rather than failing.
    assert _source.resolve(b"\x00tflite", "tensorflowlite").metadata == {}
    assert _source.resolve([b"a", b"b"], "ggml").metadata == {}


BODY = """<?xml version="1.0"?>
<net name="m" version="11">
\t<layers>
\t\t<layer id="0" name="x" type="Parameter" version="opset1">
\t\t\t<data shape="2" element_type="f32" />
\t\t\t<output><port id="0" precision="FP32" names="x"><dim>2</dim></port></output>
\t\t</layer>
\t\t<layer id="1" name="relu" type="ReLU" version="opset1">
\t\t\t<input><port id="0" precision="FP32"><dim>2</dim></port></input>
\t\t\t<output><port id="1" precision="FP32" names="y"><dim>2</dim></port></output>
\t\t</layer>
\t\t<layer id="2" name="y" type="Result" version="opset1">
\t\t\t<input><port id="0" precision="FP32"><dim>2</dim></port></input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />
\t\t<edge from-layer="1" from-port="1" to-layer="2" to-port="0" />
\t</edges>
{}
</net>
"""
POT_CONFIG = """<config>{
        'compression': {'algorithms': [{'name': "Default&amp;Q", 'x':  1 &lt; 2 &gt; 0}]},
    \t'target_device': 'ANY'
    }</config>"""

# Sections of <net> after <edges>: what OpenVINO's IR reader turns into rt_info.
RT_INFO_CASES = {
    "none": "",
    "empty": "<rt_info/>",
    "name-attribute": '<rt_info><info name="a b/c" value="1"/><info name="" value="e"/></rt_info>',
    "nested": '<rt_info><a><info name="b c"><d value="1"/></info><e value="2"/></a></rt_info>',
    "repeated-key": '<rt_info><a value="1"/><b><c value="2"/></b><a value="3"/><b value="4"/>'
    '<c value="5"/><c><d value="6"/></c><e><f value="7"/></e><e><g value="8"/></e></rt_info>',
    "empty-section-replaces": '<rt_info><a value="1"/><a/><b value="2"/></rt_info>',
    "value-wins-over-children": '<rt_info><a value="1"><b value="2"/></a></rt_info>',
    "text-comments-pi": '<rt_info><info name="" value="x"/>text<!-- c --><?pi x?><a value="1"/>'
    "<b>more text</b></rt_info>",
    "unset": '<rt_info><unset unset_cli_parameters="top"/><s><unset unset_cli_parameters="a, b"/>'
    '</s><t><info name="unset" unset_cli_parameters="no"/></t></rt_info>',
    "version-entry": '<rt_info><version value="mine"/><s><version value="kept"/></s></rt_info>',
    "attribute-whitespace": '<rt_info><a value="x\ty\nz&#10;w&#9;&#13;"/></rt_info>',
    "only-first-rt-info": '<rt_info><a value="1"/></rt_info><rt_info><b value="2"/></rt_info>',
    "rt-info-beats-legacy":
        '<rt_info><a value="1"/></rt_info><meta_data><b value="2"/></meta_data>',
    "legacy-meta-data": '<meta_data><MO_version value="2022.1"/><cli_parameters>'
    '<input_model value="m.onnx"/><info name="x y" value="q"/><nested><a value="1"/></nested>'
    '<unset unset_cli_parameters="a, b"/></cli_parameters><info name="ignored" value="z"/>'
    "</meta_data>",
    "legacy-optimization-entry": '<meta_data><optimization value="1"/></meta_data>',
    "pot-config-text": f"<quantization_parameters>{POT_CONFIG}"
    '<version value="invalid version"/><cli_params value="{}"/></quantization_parameters>',
    "pot-config-elements": "<quantization_parameters><config><a x=\"1&amp;&quot;&lt;&gt;\" "
    'y="t&#10;&#9;&#13;z">hi  there &amp; &lt;</a>  <b/><c><d>t</d>mixed<e/></c></config>'
    "</quantization_parameters>",
    "pot-config-odd": '<quantization_parameters><config/><config k="v">x</config>'
    '<info name="config">named</info><config>  </config><s><config>x  y</config></s>'
    "</quantization_parameters>",
    "pot-config-in-rt-info": "<rt_info><quantization_parameters><config>x  y</config>"
    '</quantization_parameters><r><info name="quantization_parameters"><config>deep  er</config>'
    "</info></r></rt_info>",
}  # fmt: skip


@pytest.mark.parametrize("section", RT_INFO_CASES.values(), ids=RT_INFO_CASES.keys())
def test_rt_info_cases_match_openvino(section: str) -> None:
    xml = BODY.format(section)
    assert _ir.read(xml.encode()).metadata == ov_metadata(ov_read_xml(xml).get_rt_info())


def test_rt_info_case_details() -> None:
    """A few of the cases above spelled out, so the comparison cannot pass vacuously."""

    def meta(case: str) -> dict[str, str]:
        return _ir.read(BODY.format(RT_INFO_CASES[case]).encode()).metadata

    assert meta("none") == {"version": "11"}
    assert meta("name-attribute") == {"a b/c": "1", "": "e", "version": "11"}
    assert meta("repeated-key") == {"a": "3", "b": "4", "c/d": "6", "e/g": "8", "version": "11"}
    assert meta("version-entry") == {"s/version": "kept", "version": "11"}
    legacy = meta("legacy-meta-data")
    assert legacy["MO_version"] == "2022.1" and legacy["conversion_parameters/x y"] == "q"
    assert legacy["conversion_parameters/unset"] == "a, b" and legacy["info"] == "z"
    config = meta("pot-config-text")["optimization/config"]
    assert config.startswith("{ 'compression': {'algorithms': [{'name': \"Default&amp;Q\"")
    assert "1 &lt; 2 &gt; 0" in config and "\t'target_device'" in config
    assert meta("pot-config-elements")["optimization/config"] == (
        '\t<a x="1&amp;&quot;&lt;>" y="t&#10;&#09;&#13;z">hi there &amp; &lt;</a>\t<b />'
        "\t<c>\t\t<d>t</d>mixed<e />\t</c>"
    )


@pytest.mark.parametrize(
    "net,accepted",
    [('version="10"', True), ('version="+11"', True), ('version="011"', True),
     ('version=" 11"', True), ('version="11 "', False), ('version="abc"', False),
     ('version="-1"', False), ('version="9223372036854775808"', False), ("", False)],
)  # fmt: skip
def test_ir_version_entry(net: str, accepted: bool) -> None:
    """``version`` is the IR version OpenVINO's reader adds; where OpenVINO refuses the
    document for its version, wasinn leaves it out rather than refuse (the host will)."""
    xml = BODY.format("").replace('version="11"', net, 1)
    meta = _ir.read(xml.encode()).metadata
    if accepted:
        assert meta == ov_metadata(ov_read_xml(xml).get_rt_info())
        assert meta["version"] == str(int(net.split('"')[1]))
    else:
        with pytest.raises(RuntimeError):
            ov_read_xml(xml)
        assert meta == {}


@pytest.mark.parametrize(
    "section,what",
    [("<meta_data><foo/></meta_data>", "<foo>"),
     ('<meta_data>stray<a value="1"/></meta_data>', "text 'stray'")],
)  # fmt: skip
def test_unreadable_legacy_metadata_is_a_model_format_error(section: str, what: str) -> None:
    xml = BODY.format(section)
    with pytest.raises(RuntimeError, match="Unsupported legacy argument"):
        ov_read_xml(xml)
    with pytest.raises(ModelFormatError, match=f"its <meta_data> holds {what}") as err:
        _ir.read(xml.encode(), "old.xml")
    assert str(err.value).startswith("old.xml ")


def _random_section(rng: random.Random, depth: int) -> str:
    """A random run of rt_info entries: tags and name attributes from a small set (so
    keys repeat), values, sections, text, and the legacy special cases."""
    parts = []
    for _ in range(rng.randrange(5)):
        roll = rng.random()
        if roll < 0.1:
            parts.append(rng.choice(["text", "&lt;t&gt;", " x "]))
            continue
        tag = rng.choice(["a", "b", "info", "unset", "config", "quantization_parameters"])
        attrs = ""
        if rng.random() < 0.4:
            attrs += f' name="{rng.choice(["a", "b c", "", "config", "x/y"])}"'
        if rng.random() < 0.2:
            attrs += ' unset_cli_parameters="u, v"'
        if rng.random() < 0.5:
            attrs += f' value="{rng.choice(["1", "", "&amp;&#10;", "ü"])}"'
        inner = _random_section(rng, depth + 1) if depth < 3 and rng.random() < 0.6 else ""
        parts.append(f"<{tag}{attrs}>{inner}</{tag}>" if inner else f"<{tag}{attrs}/>")
    return "".join(parts)


def test_random_rt_info_matches_openvino() -> None:
    rng = random.Random(31337)
    compared = 0
    for _ in range(300):
        section = rng.choice(["<rt_info>{}</rt_info>", "<quantization_parameters>{}"
                              "</quantization_parameters>"]).format(_random_section(rng, 0))
        xml = BODY.format(section)
        ours = _ir.read(xml.encode()).metadata
        assert ours == ov_metadata(ov_read_xml(xml).get_rt_info()), section
        compared += len(ours) > 1
    assert compared > 150  # most documents had entries beyond "version"


def test_deep_rt_info_needs_no_recursion() -> None:
    """Nesting deeper than Python's recursion limit reads (OpenVINO's own Python API
    recurses; at 500 levels it still answers, so compare there)."""
    xml = BODY.format("<rt_info>" + "<a>" * 500 + '<b value="1"/>' + "</a>" * 500 + "</rt_info>")
    assert _ir.read(xml.encode()).metadata == ov_metadata(ov_read_xml(xml).get_rt_info())
    deep = 20_000
    xml = BODY.format("<rt_info>" + "<a>" * deep + '<b value="1"/>' + "</a>" * deep + "</rt_info>")
    assert _ir.read(xml.encode()).metadata == {"a/" * deep + "b": "1", "version": "11"}


@pytest.mark.parametrize(
    "section",
    [
        # 100 sections with 10,000-character names over 20,000 entries: 20 GB of flat keys.
        "<rt_info>" + '<info name="{}">'.format("n" * 10_000) * 100
        + "".join(f'<e{i} value=""/>' for i in range(20_000)) + "</info>" * 100 + "</rt_info>",
        # A POT config 10,000 levels deep: 100 million tabs of indentation.
        "<quantization_parameters><config>" + "<a>" * 10_000 + "</a>" * 10_000
        + "</config></quantization_parameters>",
    ],
    ids=["long-section-names", "deep-pot-config"],
)  # fmt: skip
def test_metadata_that_would_flatten_huge_is_refused_quickly(section: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelFormatError, match="would take more than 16 MiB plus the document"):
        _ir.read(BODY.format(section).encode(), "bomb.xml")
    assert time.perf_counter() - start < 2.0
