#!/usr/bin/env python3
"""Independent reference implementation of attnflow's numbers (/work/shared/SEMANTICS.md).

Plain numpy for fusion, residual mixing and rollout; networkx maximum flow for attention flow.
It shares no code with the C++/WASM package: it exists so the package can be checked against it,
on the golden files in tests/fixtures/golden/ and on inputs the package has never seen
(scripts/reference/compare.py).

    attnflow_reference.py <raw|rollout|flow> FILE [--fusion mean|max|min] [--heads 0,3]
        [--alpha A] [--discard R] [--layers last|all|1,4] [--rows all|0,5] [--unnormalized]
        [--receptive-field] [--batch B]

prints {"method", "tokens", "layers" (1-based), "rows" (0-based), "scores" [layers][rows][n]},
the same shape as the attnflow CLI (which also prints "options").

Input: JSON (optionally gzip-compressed) {"tokens": [n], "attentions": [L][H][n][n]}, pre-fused
[L][n][n], or the Hugging Face layout [L][B][H][n][n]; "attentions" may also be the whole file.
.npy, .npy.gz and .npz (array "attentions", optional "tokens") are read with numpy; safetensors
(tensor "attentions" or the only 3-5-dimensional one, tokens as JSON in __metadata__.tokens) with
json and numpy; PyTorch .pt (a tensor, a tuple/list of per-layer tensors, or a dict with
"attentions" and optional "tokens") with torch.load(weights_only=True), if PyTorch is installed.
A golden file of tests/fixtures/golden/ is read through its "input" member.

Definitions (SEMANTICS.md), with rownorm(M) dividing each row by its sum and leaving a row that
sums to 0 at 0:
  F[l]   = rownorm(mean_h W[l][h])          (or element-wise max_h / min_h; over chosen heads)
  A[l]   = rownorm(alpha * F[l] + (1 - alpha) * I)
  raw[l] = F[l]
  R[1]   = A[1],  R[l] = A[l] @ R[l-1]
  flow[l][i][j] = max flow from node (l, i) to node (0, j) in the layered DAG whose edges
                  (l, i) -> (l-1, k) have capacity A[l][i][k]; normalised: each row divided by
                  its sum (a row summing to 0 stays 0).
  --receptive-field (rollout, flow; docs/SEMANTICS.md): with mask[i][j] = (F[l][i][j] > 0 for
                  some l), U = rownorm(mask) and B[l] = rownorm(alpha * U + (1 - alpha) * I) for
                  every l, the scores are (unnormalised scores of A) / (the same of B), 0 where the
                  latter is 0; then rows divided by their sums unless --unnormalized.

Requires numpy and networkx (Debian: python3-numpy python3-networkx; run with /usr/bin/python3).
"""

import argparse
import gzip
import io
import json
import pickle
import sys

import numpy as np
import networkx as nx
from networkx.algorithms.flow import preflow_push


class ReferenceError_(Exception):
    """A user error (bad input or option): reported on one line, exit code 2."""


# ----------------------------------------------------------------------------------------------
# Input


SAFETENSORS_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8"}  # little-endian, as stored


def load_safetensors(data):
    """(tokens, array) of a safetensors file, read with json and numpy (no safetensors package)."""
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + header_len].decode("utf-8"))
    meta = header.pop("__metadata__", None) or {}
    key = "attentions" if "attentions" in header else None
    if key is None:
        candidates = [k for k, t in header.items() if 3 <= len(t["shape"]) <= 5]
        if len(candidates) != 1:
            raise ReferenceError_(f"{len(candidates)} candidate attention tensors in {sorted(header)}")
        key = candidates[0]
    info = header[key]
    begin, end = info["data_offsets"]
    raw = data[8 + header_len + begin:8 + header_len + end]
    if info["dtype"] == "BF16":  # bfloat16 is the upper half of a float32
        arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    elif info["dtype"] in SAFETENSORS_DTYPES:
        arr = np.frombuffer(raw, dtype=SAFETENSORS_DTYPES[info["dtype"]])
    else:
        raise ReferenceError_(f"tensor {key!r} has dtype {info['dtype']}")
    tokens = json.loads(meta["tokens"]) if "tokens" in meta else None
    return tokens, arr.reshape(info["shape"])


def load_torch(path):
    """(tokens, array) of a torch.save file, read by PyTorch itself (weights_only: no code runs)."""
    try:
        import torch
    except ImportError as error:
        raise ReferenceError_("reading .pt files needs PyTorch (Debian: python3-torch)") from error
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:  # an object other than tensors, lists, dicts
        raise ReferenceError_(f"torch.load(weights_only=True) refused the file: {error}") from error
    tokens = None
    if isinstance(obj, dict):
        tokens = obj.get("tokens")
        obj = obj["attentions"]
    if isinstance(obj, (list, tuple)):
        obj = torch.stack(list(obj))
    return tokens, obj.to(torch.float64).numpy()


def load_json(data):
    """(tokens or None, attentions) of JSON bytes, gzip-compressed or not."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data.decode("utf-8"))
    if isinstance(doc, dict) and "attentions" not in doc and isinstance(doc.get("input"), dict):
        doc = doc["input"]  # a golden file of tests/fixtures/golden/
    if isinstance(doc, dict):
        return doc.get("tokens"), doc["attentions"]
    return None, doc


def load_attention(path, batch=0):
    """Returns (tokens, W, fused): W is float64 [L][H][n][n], or [L][n][n] when fused."""
    tokens = None
    if path.endswith(".pt") or path.endswith(".pth"):
        tokens, arr = load_torch(path)
    elif path.endswith(".npy") or path.endswith(".npz") or path.endswith(".npy.gz"):
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                loaded = np.load(io.BytesIO(handle.read()), allow_pickle=False)
        else:
            loaded = np.load(path, allow_pickle=False)
        if path.endswith(".npz"):
            arr = loaded["attentions"]
            if "tokens" in loaded.files:
                tokens = [str(t) for t in loaded["tokens"]]
        else:
            arr = loaded
    else:
        with open(path, "rb") as handle:
            data = handle.read()
        # safetensors: a little-endian u64 header length (high half 0), then the header's '{'.
        if path.endswith(".safetensors") or (data[8:9] == b"{" and data[4:8] == bytes(4)):
            tokens, arr = load_safetensors(data)
        else:
            tokens, arr = load_json(data)
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim == 5:  # Hugging Face [L][B][H][n][n]
        if not 0 <= batch < arr.shape[1]:
            raise ReferenceError_(f"batch {batch} out of range (the file has {arr.shape[1]})")
        arr = arr[:, batch]
    if arr.ndim not in (3, 4):
        raise ReferenceError_(f"attentions must be [L][H][n][n] or [L][n][n], got shape {arr.shape}")
    n = arr.shape[-1]
    if arr.shape[-2] != n:
        raise ReferenceError_(f"attention matrices must be square, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ReferenceError_("attentions contain NaN, Inf or negative values")
    if tokens is None:
        tokens = [str(i) for i in range(n)]
    if len(tokens) != n:
        raise ReferenceError_(f"{len(tokens)} tokens but the matrices are {n} x {n}")
    return list(tokens), arr, arr.ndim == 3


# ----------------------------------------------------------------------------------------------
# Fusion, residual, raw, rollout


def rownorm(M):
    """Each row divided by its sum; a row that sums to 0 stays 0."""
    sums = M.sum(axis=1, keepdims=True)
    out = np.zeros_like(M)
    np.divide(M, sums, out=out, where=sums > 0)
    return out


def fuse(W, fused, fusion="mean", heads=None):
    """F[l] for every layer, a float64 array [L][n][n]."""
    if fused:
        if heads is not None:
            raise ReferenceError_("--heads does not apply to pre-fused [L][n][n] input")
        return np.stack([rownorm(W[l]) for l in range(W.shape[0])])
    H = W.shape[1]
    if heads is None:
        heads = list(range(H))
    if not heads:
        raise ReferenceError_("--heads must name at least one head")
    for h in heads:
        if not 0 <= h < H:
            raise ReferenceError_(f"head {h} out of range (the input has {H} heads)")
    if len(set(heads)) != len(heads):
        raise ReferenceError_("--heads lists a head twice")
    chosen = W[:, heads]  # [L][h'][n][n]
    if fusion == "mean":
        combined = chosen.mean(axis=1)
    elif fusion == "max":
        combined = chosen.max(axis=1)
    elif fusion == "min":
        combined = chosen.min(axis=1)
    else:
        raise ReferenceError_(f"unknown fusion {fusion!r}")
    return np.stack([rownorm(combined[l]) for l in range(combined.shape[0])])


def discard_smallest(F, ratio):
    """vit-explain's discard_ratio, deterministic: per layer, zero the floor(ratio * n^2) smallest
    entries, ranked by value rounded to a multiple of 2^-40 (so that values equal in exact
    arithmetic tie whatever order computed them), ties by row-major position; never entry (0, 0).
    Rows are not re-normalised here."""
    if not 0.0 <= ratio < 1.0:
        raise ReferenceError_(f"discard must be in [0, 1), got {ratio}")
    out = F.copy()
    for l in range(F.shape[0]):
        flat = out[l].reshape(-1)
        count = int(np.floor(ratio * flat.size))
        key = np.floor(flat * 2.0 ** 40 + 0.5)  # exact: the values lie in [0, 1]
        smallest = np.lexsort((np.arange(flat.size), key))[:count]  # by rounded value, then position
        flat[smallest[smallest != 0]] = 0.0
    return out


def mix_residual(F, alpha):
    """A[l] = rownorm(alpha * F[l] + (1 - alpha) * I)."""
    if not 0.0 <= alpha <= 1.0:
        raise ReferenceError_(f"alpha must be in [0, 1], got {alpha}")
    n = F.shape[-1]
    eye = np.eye(n)
    return np.stack([rownorm(alpha * F[l] + (1.0 - alpha) * eye) for l in range(F.shape[0])])


def rollout(A):
    """R[l] for every layer: R[1] = A[1], R[l] = A[l] @ R[l-1]."""
    R = [A[0].copy()]
    for l in range(1, A.shape[0]):
        R.append(A[l] @ R[-1])
    return np.stack(R)


# ----------------------------------------------------------------------------------------------
# Attention flow


def node(layer, token):
    return (layer, token)


def layered_graph(A, top):
    """DiGraph on layers 0..top; edge (l, i) -> (l-1, k) with capacity A[l][i][k] (l 1-based).

    Zero-capacity edges are left out: networkx treats an edge WITHOUT a capacity attribute as
    infinite, and a zero edge carries nothing anyway.
    """
    n = A.shape[-1]
    G = nx.DiGraph()
    for layer in range(top + 1):
        for i in range(n):
            G.add_node(node(layer, i))
    for layer in range(1, top + 1):
        M = A[layer - 1]
        for i in range(n):
            for k in range(n):
                c = float(M[i, k])
                if c > 0.0:
                    G.add_edge(node(layer, i), node(layer - 1, k), capacity=c)
    return G


def attention_flow(A, layers, rows, normalize=True, progress=None):
    """Scores [len(layers)][len(rows)][n]: max flow from (l, i) to every (0, j).

    Flow from layer l only uses layers 0..l (edges go down), so each layer gets its own graph.
    The residual network is built once per graph and reused: preflow_push resets it per call.
    """
    n = A.shape[-1]
    out = np.zeros((len(layers), len(rows), n))
    total = len(layers) * len(rows) * n
    done = 0
    for a, layer in enumerate(layers):
        G = layered_graph(A, layer)
        residual = nx.algorithms.flow.build_residual_network(G, "capacity")
        for b, i in enumerate(rows):
            for j in range(n):
                R = preflow_push(G, node(layer, i), node(0, j), residual=residual, value_only=True)
                out[a, b, j] = R.graph["flow_value"]
                done += 1
            if progress:
                progress(done, total)
        if normalize:
            out[a] = rownorm(out[a])
    return out


def receptive_field_baseline(F, alpha):
    """B[l] = rownorm(alpha * U + (1 - alpha) * I) for every layer, U uniform over the mask."""
    mask = (F > 0.0).any(axis=0)
    U = rownorm(mask.astype(np.float64))
    return mix_residual(np.repeat(U[None], F.shape[0], axis=0), alpha)


def divide_where_positive(scores, baseline):
    out = np.zeros_like(scores)
    np.divide(scores, baseline, out=out, where=baseline > 0.0)
    return out


# ----------------------------------------------------------------------------------------------
# The whole computation


def compute(method, W, fused, fusion="mean", heads=None, alpha=0.5, layers="last", rows="all",
            normalize=True, progress=None, discard=0.0, receptive_field=False):
    """Returns (layers 1-based, rows 0-based, scores float64 [len(layers)][len(rows)][n])."""
    L = W.shape[0]
    n = W.shape[-1]
    if layers == "last":
        layers = [L]
    elif layers == "all":
        layers = list(range(1, L + 1))
    if rows == "all":
        rows = list(range(n))
    for layer in layers:
        if not 1 <= layer <= L:
            raise ReferenceError_(f"layer {layer} out of range 1..{L}")
    for row in rows:
        if not 0 <= row < n:
            raise ReferenceError_(f"row {row} out of range 0..{n - 1}")
    if not layers or not rows:
        raise ReferenceError_("empty layer or row list")
    F = fuse(W, fused, fusion, heads)
    if method == "raw":
        scores = np.stack([F[layer - 1][rows] for layer in layers])
    elif method == "rollout":
        A = mix_residual(discard_smallest(F, discard), alpha)
        R = rollout(A)
        scores = np.stack([R[layer - 1][rows] for layer in layers])
        if receptive_field:
            base = rollout(receptive_field_baseline(F, alpha))
            scores = divide_where_positive(scores, np.stack([base[layer - 1][rows] for layer in layers]))
            if normalize:
                scores = np.stack([rownorm(s) for s in scores])
    elif method == "flow":
        A = mix_residual(discard_smallest(F, discard), alpha)
        if receptive_field:
            scores = attention_flow(A, layers, rows, False, progress)
            base = attention_flow(receptive_field_baseline(F, alpha), layers, rows, False)
            scores = divide_where_positive(scores, base)
            if normalize:
                scores = np.stack([rownorm(s) for s in scores])
        else:
            scores = attention_flow(A, layers, rows, normalize, progress)
    else:
        raise ReferenceError_(f"unknown method {method!r}")
    return layers, rows, scores


def parse_list(text, name, words):
    if text in words:
        return text
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ReferenceError_(f"--{name} must be {'|'.join(words + ['a comma list'])}, got {text!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("method", choices=["raw", "rollout", "flow"])
    parser.add_argument("file")
    parser.add_argument("--fusion", default="mean", choices=["mean", "max", "min"])
    parser.add_argument("--heads", default=None, help="comma list of 0-based heads")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--discard", type=float, default=0.0)
    parser.add_argument("--layers", default="last", help="last|all|comma list of 1-based layers")
    parser.add_argument("--rows", default="all", help="all|comma list of 0-based rows")
    parser.add_argument("--unnormalized", action="store_true")
    parser.add_argument("--receptive-field", action="store_true")
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--progress", action="store_true", help="progress lines on stderr")
    args = parser.parse_args(argv)
    try:
        tokens, W, fused = load_attention(args.file, args.batch)
        heads = None if args.heads is None else parse_list(args.heads, "heads", [])
        layers = parse_list(args.layers, "layers", ["last", "all"])
        rows = parse_list(args.rows, "rows", ["all"])
        progress = None
        if args.progress:
            def progress(done, total):
                print(f"reference: flow {done}/{total}", file=sys.stderr)
        layers, rows, scores = compute(args.method, W, fused, args.fusion, heads, args.alpha,
                                       layers, rows, not args.unnormalized, progress, args.discard,
                                       args.receptive_field)
    except (ReferenceError_, KeyError, ValueError, OSError) as error:
        print(f"attnflow_reference: {error}", file=sys.stderr)
        return 2
    json.dump({"method": args.method, "tokens": tokens, "layers": layers, "rows": rows,
               "scores": scores.tolist()}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
