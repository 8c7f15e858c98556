"""Attention flow with scipy's C Dinic (scipy.sparse.csgraph.maximum_flow, method='dinic'), the
fastest off-the-shelf exact max-flow a Python user has. It needs integer capacities: they are
scaled by 1e9 and rounded (int32 holds a row sum of 1e9), so values err by about 1e-9 per cut edge.

Reads a request on stdin (see common.py), runs max-flow for the pairs in order until the time
budget is spent (at least one pair), and prints {"seconds", "build_seconds", "measured",
"values"} (raw flow values, divided back by 1e9). Only the maximum_flow calls are timed.
Also answers {"rollout": true, "npy", "alpha"}: numpy rollout of all layers, all rows.
"""
import time

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

from common import mixed_layers, read_request, write_reply

SCALE = 1e9


def layer_graph(A, layer):
    """The DAG of SEMANTICS.md up to `layer`: node l*n + i, arc (l, i) -> (l-1, j), capacity A[l][i][j]."""
    n = A.shape[-1]
    nodes = (layer + 1) * n
    rows, cols, caps = [], [], []
    for l in range(1, layer + 1):
        scaled = np.rint(A[l - 1] * SCALE).astype(np.int64)
        i, j = np.nonzero(scaled)
        rows.append(l * n + i)
        cols.append((l - 1) * n + j)
        caps.append(scaled[i, j])
    return csr_matrix(
        (np.concatenate(caps).astype(np.int32), (np.concatenate(rows), np.concatenate(cols))),
        shape=(nodes, nodes),
    )


def run_pairs(request):
    A = mixed_layers(request["npy"], request["alpha"])
    n = A.shape[-1]
    budget = request.get("budget", float("inf"))
    graphs = {}
    values = []
    seconds = 0.0
    build = 0.0
    for layer, row, sink in request["pairs"]:
        if values and seconds >= budget:
            break
        if layer not in graphs:
            started = time.perf_counter()
            graphs[layer] = layer_graph(A, layer)
            build += time.perf_counter() - started
        graph = graphs[layer]
        started = time.perf_counter()
        result = maximum_flow(graph, layer * n + row, sink, method="dinic")
        seconds += time.perf_counter() - started
        values.append(result.flow_value / SCALE)
    return {"seconds": seconds, "build_seconds": build, "measured": len(values), "values": values}


def run_rollout(request):
    A = mixed_layers(request["npy"], request["alpha"])
    repeats = []
    for _ in range(request.get("repeats", 3)):
        started = time.perf_counter()
        R = A[0].copy()
        out = [R]
        for l in range(1, A.shape[0]):
            R = A[l] @ R
            out.append(R)
        repeats.append(time.perf_counter() - started)
    row = request.get("row", 0)
    return {"seconds": sorted(repeats)[len(repeats) // 2], "repeats": repeats,
            "row_last": out[-1][row].tolist()}


if __name__ == "__main__":
    req = read_request()
    write_reply(run_rollout(req) if req.get("rollout") else run_pairs(req))
