"""Which default-domain ONNX operator versions the graph builder's nodes mean.

The builder writes its nodes for opset 18 (``_graph.core.OPSET``). Spliced into a
model that imports another opset, a node binds to that opset's version of the
operator instead; the splice is exact only where that version is the one of
opset 18. The table holds, for every operator of the default domain, the
opset that introduced its opset-18 version and, when there is one, the later
opset that changed it again: ``NAME:SINCE`` or ``NAME:SINCE:NEXT``. These are
facts of the ONNX operator changelog (``tests/test_onnx_opsets.py`` checks
them against the installed ``onnx`` package).
"""

from __future__ import annotations

_TABLE = """
    Abs:13 Acos:7:22 Acosh:9:22 Add:14 And:7 ArgMax:13 ArgMin:13 Asin:7:22 Asinh:9:22 Atan:7:22
    Atanh:9:22 AveragePool:11:19 BatchNormalization:15 Bernoulli:15:22 BitShift:11:28
    BitwiseAnd:18 BitwiseNot:18 BitwiseOr:18 BitwiseXor:18 BlackmanWindow:17 Cast:13:19
    CastLike:15:19 Ceil:13 Celu:12:28 CenterCropPad:18 Clip:13 Col2Im:18 Compress:11:28
    Concat:13 ConcatFromSequence:11 Constant:13:19 ConstantOfShape:9:20 Conv:11:22
    ConvInteger:10 ConvTranspose:11:22 Cos:7:22 Cosh:9:22 CumSum:14 DFT:17:20 DepthToSpace:13:28
    DequantizeLinear:13:19 Det:11:22 Div:14 Dropout:13:22 DynamicQuantizeLinear:11 Einsum:12:28
    Elu:6:22 Equal:13:19 Erf:13 Exp:13 Expand:13 EyeLike:9:22 Flatten:13:21 Floor:13 GRU:14:22
    Gather:13 GatherElements:13 GatherND:13 Gemm:13 GlobalAveragePool:1:22 GlobalLpPool:2:22
    GlobalMaxPool:1:22 Greater:13 GreaterOrEqual:16 GridSample:16:20 GroupNormalization:18:21
    HammingWindow:17 HannWindow:17 HardSigmoid:6:22 HardSwish:14:22 Hardmax:13 Identity:16:19
    If:16:19 InstanceNormalization:6:22 IsInf:10:20 IsNaN:13:20 LRN:13 LSTM:14:22
    LayerNormalization:17 LeakyRelu:16 Less:13 LessOrEqual:16 Log:13 LogSoftmax:13 Loop:16:19
    LpNormalization:1:22 LpPool:18:22 MatMul:13 MatMulInteger:10 Max:13 MaxPool:12:22
    MaxRoiPool:1:22 MaxUnpool:11:22 Mean:13 MeanVarianceNormalization:13 MelWeightMatrix:17
    Min:13 Mish:18:22 Mod:13:28 Mul:14 Multinomial:7:22 Neg:13 NegativeLogLikelihoodLoss:13:22
    NonMaxSuppression:11 NonZero:13 Not:1 OneHot:11:28 Optional:15:28 OptionalGetElement:18:28
    OptionalHasElement:18:28 Or:7 PRelu:16 Pad:18:19 Pow:15 QLinearConv:10 QLinearMatMul:10:21
    QuantizeLinear:13:19 RNN:14:22 RandomNormal:1:22 RandomNormalLike:1:22 RandomUniform:1:22
    RandomUniformLike:1:22 Range:11:27 Reciprocal:13 ReduceL1:18 ReduceL2:18 ReduceLogSum:18:28
    ReduceLogSumExp:18:28 ReduceMax:18:20 ReduceMean:18 ReduceMin:18:20 ReduceProd:18
    ReduceSum:13 ReduceSumSquare:18 Relu:14 Reshape:14:19 Resize:18:19 ReverseSequence:10:28
    RoiAlign:16:22 Round:11:22 STFT:17 Scan:16:19 Scatter:11 ScatterElements:18 ScatterND:18
    Selu:6:22 SequenceAt:11 SequenceConstruct:11 SequenceEmpty:11 SequenceErase:11
    SequenceInsert:11 SequenceLength:11 SequenceMap:17 Shape:15:19 Shrink:9 Sigmoid:13 Sign:13
    Sin:7:22 Sinh:9:22 Size:13:19 Slice:13 Softmax:13 SoftmaxCrossEntropyLoss:13 Softplus:1:22
    Softsign:1:22 SpaceToDepth:13:28 Split:18 SplitToSequence:11:24 Sqrt:13 Squeeze:13:21
    StringNormalizer:10 Sub:14 Sum:13 Tan:7:22 Tanh:13 TfIdfVectorizer:9 ThresholdedRelu:10:22
    Tile:13 TopK:11:24 Transpose:13:21 Trilu:14 Unique:11:28 Unsqueeze:13:21 Upsample:10
    Where:16 Xor:7
"""

#: operator -> (opset of its opset-18 version, opset of its next version or None)
VERSIONS: dict[str, tuple[int, int | None]] = {}
for _item in _TABLE.split():
    _name, _since, *_next = _item.split(":")
    VERSIONS[_name] = (int(_since), int(_next[0]) if _next else None)


def same_as_opset_18(op_type: str, opset: int) -> bool:
    """True when ``op_type`` in a model importing ``opset`` means what it means at 18.

    >>> same_as_opset_18("Add", 14), same_as_opset_18("Add", 13)
    (True, False)
    """
    known = VERSIONS.get(op_type)
    if known is None:
        return False
    since, later = known
    return since <= opset and (later is None or opset < later)
