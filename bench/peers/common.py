"""Shared by the Python peers: read the benchmark's .npy input and build the matrices the
authors run max-flow on, independently of attnflow (numpy, float64)."""
import json
import sys

import numpy as np


def mixed_layers(path, alpha):
    """A[l] = rownorm(alpha * rownorm(mean_h W[l][h]) + (1 - alpha) * I), as a float64 [L, n, n]."""
    W = np.load(path, mmap_mode="r")
    if W.ndim == 3:
        fused = np.asarray(W, dtype=np.float64)
    else:
        fused = np.stack([np.asarray(W[l], dtype=np.float64).mean(axis=0) for l in range(W.shape[0])])
    sums = fused.sum(axis=-1, keepdims=True)
    F = np.divide(fused, sums, out=np.zeros_like(fused), where=sums > 0)
    n = F.shape[-1]
    A = alpha * F + (1 - alpha) * np.eye(n)[None]
    totals = A.sum(axis=-1, keepdims=True)
    return np.divide(A, totals, out=np.zeros_like(A), where=totals > 0)


def read_request():
    """{"npy", "alpha", "pairs": [[layer (1-based), row, sink], ...], "budget": seconds} on stdin."""
    return json.load(sys.stdin)


def write_reply(reply):
    json.dump(reply, sys.stdout)
    sys.stdout.write("\n")
