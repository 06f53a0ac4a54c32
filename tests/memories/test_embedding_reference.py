"""The local model on ONNX Runtime against sentence-transformers' own vectors, and the ONNX
model's file: built once into the data directory, reused, rebuilt when its sources change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memories.providers import minilm_onnx
from memories.providers.embeddings import LocalEmbedder, get_embedder

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = json.loads((ROOT / "tests" / "data" / "embedding_reference.json").read_text(encoding="utf-8"))


def _assert_matches_reference(vectors: np.ndarray) -> None:
    cosines = {row["name"]: float(np.dot(row["vector"], vector))
               for row, vector in zip(REFERENCE["texts"], vectors, strict=True)}
    drifted = {name: round(cosine, 7) for name, cosine in cosines.items() if cosine < 0.99999}
    assert not drifted, f"vectors moved from sentence-transformers' (cosine < 0.99999): {drifted}"


def test_the_reference_sample_covers_what_it_should():
    rows = {row["name"]: row for row in REFERENCE["texts"]}
    assert rows["empty"]["text"] == "" and rows["one word"]["word_pieces"] < 5
    assert rows["one full window"]["word_pieces"] == REFERENCE["window"] == 254
    assert rows["one past a window"]["windows"] == 2 and rows["long"]["windows"] >= 3
    assert all(abs(np.linalg.norm(row["vector"]) - 1) < 1e-6 for row in rows.values())


def test_local_vectors_are_sentence_transformers_own_in_one_batch_and_alone():
    embedder = get_embedder()
    assert isinstance(embedder, LocalEmbedder)
    texts = [row["text"] for row in REFERENCE["texts"]]
    together = embedder.embed(texts)
    assert together.dtype == np.float32 and together.shape == (len(texts), 384)
    _assert_matches_reference(together)
    _assert_matches_reference(np.stack([embedder.embed([text])[0] for text in texts]))


def test_small_batches_of_mixed_lengths_pad_without_moving_a_vector(settings):
    settings.ULTRON_EMBEDDING_BATCH_SIZE = 3  # read per call: the long texts' windows and the short ones mix
    embedder = LocalEmbedder()
    _assert_matches_reference(embedder.embed([row["text"] for row in REFERENCE["texts"]]))


def test_embedding_imports_neither_torch_nor_the_hugging_face_libraries():
    code = (
        "import sys, django\n"
        "django.setup()\n"
        "import ultron_site.urls\n"
        "from memories.providers.embeddings import get_embedder\n"
        "vectors = get_embedder().embed(['pip install fails behind the proxy', 'x ' * 600])\n"
        "assert vectors.shape == (2, 384)\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'sentence_transformers'})\n"
        "print('loaded:', loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "ultron_site.settings"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "loaded: []" in result.stdout, result.stdout


def test_a_forked_process_makes_its_own_session_and_gets_the_same_vectors():
    """A web server that loads the model and then forks its workers: the ONNX session's threads
    stay in the parent (a child using its session runs on one thread), so the child makes its own."""
    embedder = get_embedder()
    texts = ["pip install fails behind the proxy", "x " * 300]
    before = embedder.embed(texts)
    parent_session = embedder._load()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running any of pytest's teardown
        try:
            vectors = embedder.embed(texts)
            answer = {"own_session": embedder._load() is not parent_session,
                      "cosine": float((vectors * before).sum(axis=1).min())}
            os.write(write, json.dumps(answer).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        answer = json.loads(pipe.read())
    assert answer["own_session"] and answer["cosine"] > 0.99999
    assert embedder._load() is parent_session  # the parent keeps its own


def _fake_sources(directory: Path, *, eps: str = "1e-12") -> Path:
    (directory / "1_Pooling").mkdir(parents=True)
    for name in minilm_onnx.SOURCES:
        (directory / name).write_text(f"{name} {eps}")
    return directory


def _tiny_model(value: float):
    """A real ONNX model, small, with weights big enough to go to the ``.data`` file."""
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.full(512, value, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_model_files_are_built_once_reused_and_rebuilt_when_their_sources_change(tmp_path, monkeypatch):
    import onnxruntime

    builds: list[Path] = []

    def build(source: Path):
        builds.append(source)
        return _tiny_model(len(builds))

    monkeypatch.setattr(minilm_onnx, "build", build)
    source = _fake_sources(tmp_path / "package")
    models = tmp_path / "data" / "models"
    first = minilm_onnx.ensure(models, source)
    assert isinstance(first, Path) and first.parent == models
    assert first.name.startswith("all-MiniLM-L6-v2-") and first.name.endswith(f"-v{minilm_onnx.BUILDER_VERSION}.onnx")
    # the weights are in the .data file beside the graph, which ONNX Runtime finds and reads
    assert (models / (first.name + ".data")).stat().st_size >= 2048 > first.stat().st_size
    session = onnxruntime.InferenceSession(str(first), providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.zeros(512, dtype=np.float32)})[0][0] == 1.0
    assert minilm_onnx.ensure(models, source) == first and len(builds) == 1  # reused, not rebuilt
    (source / "config.json").write_text("config.json 1e-6")  # another model: other files
    second = minilm_onnx.ensure(models, source)
    assert isinstance(second, Path) and second != first and len(builds) == 2
    monkeypatch.setattr(minilm_onnx, "BUILDER_VERSION", minilm_onnx.BUILDER_VERSION + 1)  # a new builder
    third = minilm_onnx.ensure(models, source)
    assert isinstance(third, Path) and third.name.endswith(f"-v{minilm_onnx.BUILDER_VERSION}.onnx")
    # the earlier models are removed, and no scratch directory is left behind
    assert sorted(path.name for path in models.iterdir()) == [third.name, third.name + ".data"]
    (models / (third.name + ".data")).unlink()  # half a model is no model
    assert minilm_onnx.ensure(models, source) == third and len(builds) == 4


def test_two_starts_building_at_once_both_end_with_the_same_whole_model(tmp_path, monkeypatch):
    """Two starts (threads here; processes share nothing more than the directory) both find no
    model, both build (each held until the other has started), both rename into place."""
    import threading

    import onnxruntime

    both_building = threading.Barrier(2, timeout=10)

    def build(source: Path):
        both_building.wait()
        return _tiny_model(1.0)

    monkeypatch.setattr(minilm_onnx, "build", build)
    source, models = _fake_sources(tmp_path / "package"), tmp_path / "models"
    paths: list[object] = []
    threads = [threading.Thread(target=lambda: paths.append(minilm_onnx.ensure(models, source))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert len(paths) == 2 and paths[0] == paths[1] and isinstance(paths[0], Path)
    assert sorted(path.name for path in models.iterdir()) == [paths[0].name, paths[0].name + ".data"]
    session = onnxruntime.InferenceSession(str(paths[0]), providers=["CPUExecutionProvider"])
    assert session.run(None, {"x": np.ones(512, dtype=np.float32)})[0][0] == 2.0


def test_a_data_directory_that_cannot_be_written_costs_a_build_not_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(minilm_onnx, "build", lambda source: _tiny_model(1.0))
    (tmp_path / "data").write_text("a file where the data directory should be")
    model = minilm_onnx.ensure(tmp_path / "data" / "models", _fake_sources(tmp_path / "package"))
    assert isinstance(model, bytes) and model == _tiny_model(1.0).SerializeToString()


def test_the_built_graph_reads_its_sizes_from_the_configuration():
    source = minilm_onnx.package_dir()
    model = minilm_onnx.build(source)
    kinds = [node.op_type for node in model.graph.node]
    assert kinds.count("LayerNormalization") == 1 + 2 * 6 and kinds.count("Softmax") == 6 and kinds.count("Erf") == 6
    epsilons = {attribute.f for node in model.graph.node if node.op_type == "LayerNormalization"
                for attribute in node.attribute if attribute.name == "epsilon"}
    assert len(epsilons) == 1 and epsilons.pop() == pytest.approx(1e-12)  # config.json's layer_norm_eps
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in model.graph.output] == ["sentence_embedding"]
