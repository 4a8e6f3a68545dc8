"""Gemma 3 270M as a stateful OpenVINO IR for apps/generate (host side, build time only).

The model is written out here as a small torch module (``Gemma3Stateful``)
that loads the state_dict transformers makes from the GGUF, traced by
``openvino.convert_model``; the sampling head is then added in OpenVINO ops
and the KV cache turned into OpenVINO state. Written from the architecture,
not traced from transformers' own module, because that one builds its masks
and caches in Python objects (``DynamicCache``, mask functions) that do not
trace into a graph whose past length and window are read from the state.

The IR (the app is written against exactly this):

- inputs ``input_ids`` i64[1, ?] (the new tokens), ``penalized_ids`` i64[?]
  (at least one id; duplicates harmless), ``penalty`` f32[1] (transformers'
  RepetitionPenaltyLogitsProcessor: a positive logit is divided by it, any
  other multiplied; 1.0 changes nothing), ``top_k`` i64[1] (1..262144);
- outputs ``top_logits`` f32[K] (the penalised logits of the last position,
  descending) and ``top_ids`` i64[K] (their token ids; equal logits in
  ascending id order, so top_k=1 is torch.argmax's greedy token);
- state: one variable per layer for keys and one for values (36), empty in
  each new infer request; each infer appends the new tokens' keys and values,
  and positions start at the state's length. Every layer keeps every key (the
  graph is correct to any length the state holds; the app limits the context
  to 4096); the sliding-window layers mask keys 512 or more positions back,
  as transformers 5.23 does (its window of 512 includes the current token:
  ``masking_utils.sliding_window_overlay`` allows ``kv_idx > q_idx - 512``,
  and ``DynamicSlidingWindowLayer`` caches the last 511 keys).

The LM head runs on the last position only: its matrix is the 262144 x 640
embedding, 168 M multiply-adds a token for logits nobody reads (prefill was
2-4x slower with the head on every position).

The CPU plugin keeps the KV cache inside its attention kernel only for the
exact pattern ``make_stateful`` writes (see there); each step then appends to
the cache instead of copying it, in the KV_CACHE_PRECISION the IR asks for.

The variants (``save_exact``, ``save_fast``), measured with export_check.py
on this project's 2-core machine:

- gemma3-exact: the GGUF's own integers and scales (``carry_gguf_grids``:
  int8/uint8 per 16 or 32 weights with f32 scales, the same values as the f32
  weights transformers dequantizes), f32 compute, f32 KV cache, no dynamic
  quantization. transformers' f32 greedy tokens, token for token. 294 MB, a
  quarter of f32 weights' size, twice their decoding speed, a third of their
  memory;
- gemma3-fast: NNCF int8 (per output channel), f16 KV cache, the plugin's
  dynamic quantization of activations; the same decoding speed as exact, 1.3-2x
  its prefill, and text that leaves transformers' greedy path after a few to
  a few dozen tokens (an int8 rounding of weights that were 4-8 bit already).

Run by prepare.py (``python gemma_export.py GGUF_DIR OUT``); the tests use
``load_reference`` for the transformers oracle, and export_check.py for the
native OpenVINO runs.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import torch
import torch.nn.functional as F
from openvino import opset15
from openvino.op.util import Variable, VariableInfo
from torch import nn

#: The GGUF's file name inside the folder transformers loads it from.
GGUF_NAME = "model.gguf"
#: How many positions back a sliding-window layer sees, the current one included.
SLIDING_WINDOW = 512

INPUT_IDS = "input_ids"
PENALIZED_IDS = "penalized_ids"
PENALTY = "penalty"
TOP_K = "top_k"
TOP_LOGITS = "top_logits"
TOP_IDS = "top_ids"

#: gemma3-exact's runtime options: computed as transformers computes it in f32.
#: The CPU plugin's defaults would be a u8 KV cache, activations quantized to
#: int8 on the fly (per 32) for matrices with int8 weights, and, on CPUs with
#: AMX, bf16 compute. A model's rt_info ranks below the plugin's own properties
#: (core.set_property, or the plugins.xml build.sh writes: it sets
#: INFERENCE_PRECISION_HINT=f32 unless WASINN_PRECISION=bf16, and then sets
#: nothing, so this f32 holds in both cases).
EXACT_OPTIONS = {
    "INFERENCE_PRECISION_HINT": "f32",
    "KV_CACHE_PRECISION": "f32",
    "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
}
#: gemma3-fast's runtime options: an f16 KV cache, as fast as the default u8
#: (2-3 % faster on this project's machine, at 256 to 2048 tokens of context)
#: and closer to f32. The compute precision is left to the host (build.sh's
#: WASINN_PRECISION): forcing bf16 made prefill 20 % faster here (AMD,
#: avx512_bf16), decoding no faster, and greedy agreement with transformers a
#: little lower. Dynamic quantization (the default) stays: without it prefill
#: took twice as long and agreement hardly changed.
FAST_OPTIONS = {"KV_CACHE_PRECISION": "f16"}


def state_names(layers: int) -> list[tuple[str, str]]:
    """The (past input, present output) name pairs that become state variables."""
    return [
        (f"past.{i}.{kind}", f"present.{i}.{kind}")
        for i in range(layers)
        for kind in ("key", "value")
    ]


def load_reference(folder: Path, dtype: str = "float32") -> tuple[Any, Any]:
    """transformers' Gemma3ForCausalLM and tokenizer from ``folder``: either
    a folder holding ``model.gguf``, or one written by ``save_pretrained``
    (prepare.py's ``hf`` and ``hf-tokenizer``, much faster to load)."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a model hub
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    transformers.logging.set_verbosity_error()
    if (folder / GGUF_NAME).is_file():
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_NAME)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_NAME, dtype=dtype)
    else:
        tokenizer = AutoTokenizer.from_pretrained(folder.parent / "hf-tokenizer")
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    model.eval()
    return model, tokenizer


class RMSNorm(nn.Module):  # type: ignore[misc]  # torch is untyped here (pyproject.toml)
    """Gemma's RMS norm: the stored weight is the gain's offset from 1, so a
    zero-initialised norm is the identity scaling."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scaled = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return scaled * (1.0 + self.weight)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding in the half-split layout Gemma's checkpoints use:
    dimension j pairs with j + head_dim / 2, not with its neighbour."""
    half = x.shape[-1] // 2
    swapped = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + swapped * sin


class Attention(nn.Module):  # type: ignore[misc]
    """Grouped-query attention over the cached and the new positions."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        self.scale = config.query_pre_attn_scalar**-0.5
        hidden = config.hidden_size
        self.q_proj = nn.Linear(hidden, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=False)
        self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor,
        past_k: torch.Tensor,
        past_v: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # [1, n, heads * dim] -> [1, heads, n, dim]; -1 keeps n dynamic in the trace.
        q = self.q_proj(x).reshape(1, -1, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).reshape(1, -1, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).reshape(1, -1, self.kv_heads, self.head_dim).transpose(1, 2)
        q = rotate(self.q_norm(q), cos, sin)
        k = rotate(self.k_norm(k), cos, sin)
        keys = torch.cat((past_k, k), dim=2)
        values = torch.cat((past_v, v), dim=2)
        # Each key/value head serves heads / kv_heads query heads. Written as
        # unsqueeze + expand + reshape, the form OpenVINO's CPU plugin matches
        # when it fuses the KV cache into its attention kernel.
        group = self.heads // self.kv_heads
        k_all = (
            keys[:, :, None].expand(-1, -1, group, -1, -1).reshape(1, self.heads, -1, self.head_dim)
        )
        v_all = (
            values[:, :, None]
            .expand(-1, -1, group, -1, -1)
            .reshape(1, self.heads, -1, self.head_dim)
        )
        out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, scale=self.scale)
        out = out.transpose(1, 2).reshape(1, -1, self.heads * self.head_dim)
        return self.o_proj(out), keys, values


class MLP(nn.Module):  # type: ignore[misc]
    """Gated feed-forward with tanh-approximated GELU on the gate."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class Layer(nn.Module):  # type: ignore[misc]
    """One decoder layer: Gemma 3 norms both before and after each block."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        eps = config.rms_norm_eps
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps)
        self.pre_feedforward_layernorm = RMSNorm(config.hidden_size, eps)
        self.post_feedforward_layernorm = RMSNorm(config.hidden_size, eps)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor,
        past_k: torch.Tensor,
        past_v: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        attended, keys, values = self.self_attn(
            self.input_layernorm(x), cos, sin, mask, past_k, past_v
        )
        x = x + self.post_attention_layernorm(attended)
        x = x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        return x, keys, values


class Gemma3Stateful(nn.Module):  # type: ignore[misc]
    """Gemma 3's text decoder as one step over explicit KV tensors:
    ``forward(input_ids, past.0.key, past.0.value, ...)`` returns the last
    position's logits [vocab] and every layer's keys and values with the new
    tokens appended (``to_openvino`` turns the pairs into state)."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        if config.final_logit_softcapping is not None or config.attn_logit_softcapping is not None:
            raise ValueError("soft-capping is not implemented (Gemma 3 does not use it)")
        if config.use_bidirectional_attention:
            raise ValueError("bidirectional attention is not implemented")
        self.sliding = [kind == "sliding_attention" for kind in config.layer_types]
        if config.sliding_window != SLIDING_WINDOW:
            raise ValueError(f"sliding window {config.sliding_window}, expected {SLIDING_WINDOW}")
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        # f32(sqrt(hidden)), the scale transformers applies in the model's dtype.
        self.register_buffer(
            "embed_scale",
            torch.tensor(config.hidden_size**0.5, dtype=torch.float32),
            persistent=False,
        )
        self.layers = nn.ModuleList(Layer(config) for _ in config.layer_types)
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        dim = config.head_dim
        for kind in ("sliding_attention", "full_attention"):
            base = config.rope_parameters[kind]["rope_theta"]
            if config.rope_parameters[kind]["rope_type"] != "default":
                raise ValueError(f"{kind}: only unscaled rotary embeddings are implemented")
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
            self.register_buffer(f"{kind}_inv_freq", inv_freq, persistent=False)

    def load_hf(self, state: dict[str, torch.Tensor]) -> None:
        """Take the weights from transformers' Gemma3ForCausalLM state_dict
        (whose names, below ``model.``, this module's names follow)."""
        ours = {key.removeprefix("model."): value for key, value in state.items()}
        # Tied embeddings: the head is the embedding matrix itself.
        head = ours.pop("lm_head.weight", None)
        if head is not None and not torch.equal(head, ours["embed_tokens.weight"]):
            raise ValueError("lm_head.weight differs from the embedding: not a tied checkpoint")
        # assign: share transformers' tensors rather than copy 1 GB of them.
        self.load_state_dict(ours, strict=True, assign=True)

    def rope(self, kind: str, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [n, head_dim] for ``positions`` [n], in f32 as transformers computes them."""
        freqs = positions.float()[:, None] * getattr(self, f"{kind}_inv_freq")[None, :]
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos(), angles.sin()

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor) -> tuple[torch.Tensor, ...]:
        new = input_ids.shape[1]
        cached = past[0].shape[2]  # traced as ShapeOf: the past length comes from the state
        q_pos = torch.arange(new) + cached
        k_pos = torch.arange(cached + new)
        seen = k_pos[None, :] <= q_pos[:, None]  # [n, past + n]: causal
        recent = seen & (k_pos[None, :] > q_pos[:, None] - SLIDING_WINDOW)
        table = self.embed_tokens.weight  # one constant for the lookup and the head
        x = F.embedding(input_ids, table) * self.embed_scale
        angles = {kind: self.rope(kind, q_pos) for kind in ("sliding_attention", "full_attention")}
        present: list[torch.Tensor] = []
        for i, layer in enumerate(self.layers):
            kind = "sliding_attention" if self.sliding[i] else "full_attention"
            cos, sin = angles[kind]
            x, keys, values = layer(
                x, cos, sin, recent if self.sliding[i] else seen, past[2 * i], past[2 * i + 1]
            )
            present += (keys, values)
        last = self.norm(x[:, -1, :])  # [1, hidden]: the head only where it is read
        logits = F.linear(last, table).reshape(-1)
        return (logits, *present)


def add_sampling_head(model: ov.Model) -> ov.Model:
    """Replace the logits output [vocab] with the repetition penalty and top-k.

    Done in OpenVINO ops because TopK's k must be a runtime input, which a
    torch trace freezes into a constant."""
    old = model.get_results()[0]
    logits = old.input_value(0)  # what feeds the Result, not the Result itself
    penalized = opset15.parameter([-1], ov.Type.i64, name=PENALIZED_IDS)
    penalty = opset15.parameter([1], ov.Type.f32, name=PENALTY)
    top_k = opset15.parameter([1], ov.Type.i64, name=TOP_K)
    for param in (penalized, penalty, top_k):
        param.output(0).get_tensor().set_names({param.get_friendly_name()})
    picked = opset15.gather(logits, penalized, 0)
    # RepetitionPenaltyLogitsProcessor: positive logits shrink by dividing,
    # the rest by multiplying. A duplicated id scatters the same value twice.
    zero = opset15.constant(np.float32(0.0))
    scaled = opset15.select(
        opset15.greater(picked, zero),
        opset15.divide(picked, penalty),
        opset15.multiply(picked, penalty),
    )
    penalised = opset15.scatter_update(logits, penalized, scaled, 0)
    k = opset15.squeeze(top_k, opset15.constant(np.int64(0)))
    # Not stable: OpenVINO's stable TopK over the 262,144 logits took 40 ms at
    # k=40 and 1.1 s at k=1024 (per token; 0.6-0.7 ms without). Equal logits may
    # then come in any order: the guest orders the candidates (sampling.Sampler).
    # For k=1 the CPU plugin returned the lowest of equal ids in our checks, as
    # torch.argmax does; tests/test_generate_app.py holds the exact variant's
    # greedy tokens to transformers'.
    top = opset15.topk(penalised, k, 0, "max", "value", "i64", stable=False)
    top.output(0).get_tensor().set_names({TOP_LOGITS})
    top.output(1).get_tensor().set_names({TOP_IDS})
    results = [opset15.result(top.output(0)), opset15.result(top.output(1))]
    results[0].set_friendly_name(TOP_LOGITS)
    results[1].set_friendly_name(TOP_IDS)
    # In place, not a new ov.Model: the logits Result goes, everything else
    # (the present outputs that become state) stays as convert_model made it.
    model.remove_result(old)
    model.add_parameters([penalized, penalty, top_k])
    model.add_results(results)
    return model


def to_openvino(hf_model: Any) -> ov.Model:
    """The stateful IR (f32 weights, no runtime options yet) from transformers' model."""
    config = hf_model.config
    module = Gemma3Stateful(config)
    module.load_hf(hf_model.state_dict())
    module.eval()
    layers = len(config.layer_types)
    names = state_names(layers)
    kv_shape = [1, config.num_key_value_heads, -1, config.head_dim]
    # A non-empty past in the example, so that no trace-time shape is zero.
    example = [torch.ones(1, 3, dtype=torch.long)] + [
        torch.zeros(1, config.num_key_value_heads, 2, config.head_dim) for _ in names
    ]
    with torch.no_grad():
        converted = ov.convert_model(
            module,
            example_input=tuple(example),
            input=[([1, -1], ov.Type.i64)] + [(kv_shape, ov.Type.f32) for _ in names],
        )
    for port, (_, present) in zip(converted.outputs[1:], names, strict=True):
        port.get_tensor().set_names({present})
    for param, (past, _) in zip(converted.get_parameters()[1:], names, strict=True):
        param.output(0).get_tensor().set_names({past})
        param.set_friendly_name(past)
    converted.get_parameters()[0].output(0).get_tensor().set_names({INPUT_IDS})
    model = add_sampling_head(converted)
    make_stateful(model, names)
    return model


def make_stateful(model: ov.Model, names: list[tuple[str, str]]) -> None:
    """Turn each (past input, present output) pair into a state variable, in place.

    Written out rather than left to openvino's MakeStateful pass because the
    CPU plugin keeps the KV cache inside its own attention kernel (in
    KV_CACHE_PRECISION, and appending rather than copying the whole past
    each step) only for the exact pattern its StatefulSDPAFusion matches:
    ReadValue with an initialiser (without one, compiling fails: "Node
    ReadValue_... contains less parent edges than 0"), then a Gather along
    the batch axis whose indices are one node shared by every layer (a
    stand-in for beam search's reordering; here always [0]), then the
    Concat with the new keys, feeding both the attention and the Assign.
    The past length may read the ReadValue's shape (a ShapeOf is one of the
    consumers the fusion allows)."""
    params = {p.get_friendly_name(): p for p in model.get_parameters()}
    results = {next(iter(r.output(0).get_names())): r for r in model.get_results()}
    batch_order = opset15.constant(np.array([0], dtype=np.int32))
    axis = opset15.constant(np.int32(0))
    for past, present in names:
        param, result = params[past], results[present]
        info = VariableInfo()
        info.data_shape = param.get_partial_shape()
        info.data_type = param.get_element_type()
        info.variable_id = past
        variable = Variable(info)
        # The initial value: no positions yet ([1, kv_heads, 0, head_dim]).
        shape = [0 if dim.is_dynamic else dim.get_length() for dim in info.data_shape]
        empty = opset15.broadcast(
            opset15.constant(np.float32(0.0)), opset15.constant(np.array(shape, dtype=np.int64))
        )
        read = opset15.read_value(empty, variable)
        reordered = opset15.gather(read, batch_order, axis)
        for target in list(param.output(0).get_target_inputs()):
            shape_only = target.get_node().get_type_name() == "ShapeOf"
            target.replace_source_output(read.output(0) if shape_only else reordered.output(0))
        present_value = result.input_value(0)
        # Assign takes a node, not an output: the present is a Concat's only output.
        assert present_value.get_index() == 0, present_value
        model.add_sinks([opset15.assign(present_value.get_node(), variable)])
        model.remove_result(result)
        model.remove_parameter(param)
    model.validate_nodes_and_infer_types()


@dataclass(frozen=True)
class Grid:
    """A weight matrix [out, in] as the GGUF holds it: small integers ``q`` on
    a grid per run of ``group`` inputs, value = (q - zero) * scale (no zero: 0)."""

    q: np.ndarray  # int8 (or uint8 with a zero), [out, in]
    scale: np.ndarray  # f32, [out, in / group]
    zero: np.ndarray | None  # f32, [out, in / group]
    group: int


def _f16_field(blocks: np.ndarray, at: int) -> np.ndarray:
    """The f16 at byte ``at`` of every block, as f32."""
    raw = np.ascontiguousarray(blocks[..., at : at + 2])
    return raw.view(np.float16)[..., 0].astype(np.float32)


#: The GGUF block types ``block_scales`` reads (all of Q4_K_M's).
GRID_TYPES = ("Q8_0", "Q5_0", "Q6_K", "Q4_K")


def block_scales(kind: Any, data: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Per-group scale, offset (Q4_K only) and group size of a GGUF tensor's
    raw blocks ``data`` [rows, bytes]: only the fields the values are scaled
    by, read as ggml lays them out; the integers come from the values."""
    from gguf import GGMLQuantizationType as T

    rows = data.shape[0]
    if kind in (T.Q8_0, T.Q5_0):  # 32 values: f16 d first; value = d * q
        blocks = data.reshape(rows, -1, 34 if kind == T.Q8_0 else 22)
        return _f16_field(blocks, 0), None, 32
    if kind == T.Q6_K:  # 256 values: ..., 16 int8 scales at 192, f16 d at 208; d * sc * q
        blocks = data.reshape(rows, -1, 210)
        sc = blocks[..., 192:208].view(np.int8).astype(np.float32)
        return (_f16_field(blocks, 208)[..., None] * sc).reshape(rows, -1), None, 16
    if kind == T.Q4_K:  # 256 values: f16 d, f16 dmin, 8 x (6-bit sc, 6-bit m); d*sc*q - dmin*m
        blocks = data.reshape(rows, -1, 144)
        low, mid, high = blocks[..., 4:8], blocks[..., 8:12], blocks[..., 12:16]
        # Sub-blocks 0-3 keep 6 bits in bytes 4-11; 4-7 split theirs between
        # those bytes' top two bits and the nibbles of bytes 12-15.
        sc = np.concatenate((low & 63, (high & 15) | ((low >> 6) << 4)), axis=-1)
        m = np.concatenate((mid & 63, (high >> 4) | ((mid >> 6) << 4)), axis=-1)
        scale = _f16_field(blocks, 0)[..., None] * sc.astype(np.float32)
        offset = _f16_field(blocks, 2)[..., None] * m.astype(np.float32)
        return scale.reshape(rows, -1), offset.reshape(rows, -1), 32
    raise ValueError(f"no grid for GGUF type {kind.name}")


def grid_of(kind: Any, data: np.ndarray) -> tuple[Grid, np.ndarray]:
    """A quantized GGUF tensor as a Grid, and its f32 values as transformers
    loads them (gguf's dequantize). Raises ValueError unless the grid gives
    back every value: bit for bit where the value is scale * q, which is the
    format's own arithmetic (f16 d times a small integer scale times q, all
    exact in f32); Q4_K's offset becomes a fractional zero (offset / scale),
    within an f32 rounding of each value."""
    from gguf.quants import dequantize

    values = dequantize(data, kind)
    scale, offset, group = block_scales(kind, data)
    rows, cols = values.shape
    grouped = values.reshape(rows, cols // group, group)
    s = scale[..., None]
    o = np.float32(0.0) if offset is None else offset[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(s != 0, np.rint((grouped + o) / s), 0).astype(np.float32)
    rebuilt = s * q if offset is None else s * q - o
    if not np.array_equal(rebuilt, grouped):
        raise ValueError(f"{kind.name}: the scales read do not give the values back")
    if offset is None:
        grid = Grid(q.astype(np.int8).reshape(rows, cols), scale, None, group)
    else:
        if np.any((scale == 0) & (offset != 0)):
            raise ValueError("Q4_K: a sub-block with scale 0 and an offset has no zero point")
        with np.errstate(divide="ignore", invalid="ignore"):
            zero = np.where(scale != 0, offset / scale, 0).astype(np.float32)
        grid = Grid(q.astype(np.uint8).reshape(rows, cols), scale, zero, group)
    return grid, values


#: transformers' names (below ``model.``) for the GGUF's per-layer tensors.
GGUF_LAYER_NAMES = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}  # fmt: skip


def gguf_name(param: str) -> str:
    """The GGUF tensor behind a parameter of Gemma3Stateful (transformers' name)."""
    if param == "embed_tokens.weight":
        return "token_embd.weight"
    _, layer, *middle, last = param.split(".")
    return f"blk.{layer}.{GGUF_LAYER_NAMES['.'.join(middle)]}.{last}"


def carry_gguf_grids(model: ov.Model, gguf: Path) -> dict[str, int]:
    """Replace every f32 weight matrix of ``model`` (from ``to_openvino``)
    with the GGUF's own integers and scales, in place; counts by GGUF type.

    Each becomes Constant(int8 or uint8 [out, in / group, group]) -> Convert
    to f32 -> (Subtract the zero) -> Multiply by the f32 scale -> Reshape:
    the form the CPU plugin keeps compressed and expands inside its matrix
    multiply and its embedding Gather. Unlike NNCF's int8 (per output
    channel, a new rounding of every weight), the values are those the f32
    model has, 1 byte a weight instead of 4. The scales stay f32 (save
    without compress_to_fp16): Q6_K's d * sc does not fit in an f16."""
    from gguf import GGUFReader

    tensors = {t.name: t for t in GGUFReader(str(gguf)).tensors}
    counts: dict[str, int] = {}
    for node in model.get_ordered_ops():
        name = node.get_friendly_name()
        if node.get_type_name() != "Constant" or not name.startswith("self."):
            continue
        param = name.removeprefix("self.")
        if not param.endswith("proj.weight") and param != "embed_tokens.weight":
            continue
        tensor = tensors[gguf_name(param)]
        kind = tensor.tensor_type.name
        if kind not in GRID_TYPES:  # not in this GGUF; another's would keep f32 there
            counts[f"{kind} kept as f32"] = counts.get(f"{kind} kept as f32", 0) + 1
            continue
        grid, values = grid_of(tensor.tensor_type, tensor.data)
        # The traced constant must hold exactly these values: the mapping is right.
        if not np.array_equal(node.get_data(), values):
            raise ValueError(f"{param}: the IR's weights are not {tensor.name}'s values")
        rows, cols = values.shape
        parts = cols // grid.group
        x = opset15.convert(opset15.constant(grid.q.reshape(rows, parts, grid.group)), ov.Type.f32)
        if grid.zero is not None:
            x = opset15.subtract(x, opset15.constant(grid.zero.reshape(rows, parts, 1)))
        x = opset15.multiply(x, opset15.constant(grid.scale.reshape(rows, parts, 1)))
        weight = opset15.reshape(x, opset15.constant(np.array([rows, cols], np.int64)), False)
        weight.set_friendly_name(name)
        for target in list(node.output(0).get_target_inputs()):
            target.replace_source_output(weight.output(0))
        counts[kind] = counts.get(kind, 0) + 1
    model.validate_nodes_and_infer_types()
    return counts


def save_reference(hf_model: Any, tokenizer: Any, out: Path) -> None:
    """The tests' oracle: the tokenizer, and the f32 weights in transformers'
    own format (``hf``), which load in seconds where the GGUF takes a minute.

    save_pretrained refuses a model loaded from a GGUF (its config carries
    the GGUF quantization_config), so the weights go through a fresh
    Gemma3ForCausalLM built from the config without it."""
    from transformers import Gemma3ForCausalLM

    tokenizer.save_pretrained(out / "hf-tokenizer")
    config = copy.deepcopy(hf_model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = Gemma3ForCausalLM(config)
    fresh.load_state_dict(hf_model.state_dict(), strict=True)
    fresh.save_pretrained(out / "hf")


def set_runtime_options(model: ov.Model, options: dict[str, str]) -> None:
    """Compile settings carried in the IR: a wasi-nn host compiles with the
    CPU plugin's defaults, and rt_info's runtime_options is the one way to
    change them from the model's side."""
    for key, value in options.items():
        model.set_rt_info(value, ["runtime_options", key])


def save_exact(hf_model: Any, gguf: Path, folder: Path) -> None:
    """gemma3-exact: the GGUF's own integers and f32 scales (carry_gguf_grids),
    computed in f32 with an f32 KV cache and no dynamic quantization.

    Saved without compress_to_fp16, which would round the scales, the norms'
    weights and the rotary frequencies to f16 (the last alone moves the
    angles at position 4000 by a good fraction of a radian)."""
    model = to_openvino(hf_model)
    counts = carry_gguf_grids(model, gguf)
    print(f"prepare: gemma3-exact weights from the GGUF as they are: {counts}", file=sys.stderr)
    set_runtime_options(model, EXACT_OPTIONS)
    ov.save_model(model, folder / "model.xml", compress_to_fp16=False)


def save_fast(hf_model: Any, folder: Path) -> None:
    """gemma3-fast: NNCF's int8 weight compression (INT8_ASYM, per output
    channel; the embedding shares its compressed matrix with the head).
    Per-channel int8 rounds every weight again, where the GGUF's grid is per
    16 or 32 weights, but the CPU plugin's int8 kernels run it fastest
    (export_check.py bench: prefill 1.3x the GGUF grid's on one thread)."""
    import nncf

    # Set after the import, which sets it to INFO: NNCF's statistics table is no news.
    logging.getLogger("nncf").setLevel(logging.WARNING)
    model = nncf.compress_weights(to_openvino(hf_model))
    set_runtime_options(model, FAST_OPTIONS)
    ov.save_model(model, folder / "model.xml", compress_to_fp16=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf_dir", type=Path, help="a folder holding model.gguf")
    parser.add_argument("out", type=Path, help="where hf, hf-tokenizer and the IR folders go")
    args = parser.parse_args()
    # One line per step, not progress bars (prepare.py also sets TQDM_DISABLE
    # for the GGUF loader's, read when tqdm is imported).
    import transformers

    transformers.utils.logging.disable_progress_bar()
    start = time.monotonic()
    hf_model, tokenizer = load_reference(args.gguf_dir)
    print(f"prepare: loaded {args.gguf_dir / GGUF_NAME} in {time.monotonic() - start:.0f} s",
          file=sys.stderr)  # fmt: skip
    def done(what: str) -> None:
        print(f"prepare: wrote {what} in {time.monotonic() - start:.0f} s", file=sys.stderr)

    start = time.monotonic()
    save_reference(hf_model, tokenizer, args.out)
    done("hf and hf-tokenizer (transformers' f32 weights and tokenizer, the tests' oracle)")
    start = time.monotonic()
    save_exact(hf_model, args.gguf_dir / GGUF_NAME, args.out / "gemma3-exact")
    done("gemma3-exact (OpenVINO IR, the GGUF's weights, f32 compute)")
    start = time.monotonic()
    save_fast(hf_model, args.out / "gemma3-fast")
    done("gemma3-fast (OpenVINO IR, int8 weights)")


if __name__ == "__main__":
    main()
