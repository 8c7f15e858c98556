#!/usr/bin/env python3
"""Checks the reference implementation against facts that do not depend on it.

- fusion/residual/rollout against explicit loops written differently (per element);
- flow for L = 1 equals A[1]; for L = 2 equals sum_k min(A[2][i][k], A[1][k][j]);
- networkx preflow_push against edmonds_karp and against an exact max flow in rational
  arithmetic (fractions.Fraction capacities, the float values converted exactly);
- 0 <= raw flow <= min(1, colsum A[1]) and rollout <= raw flow.

    /usr/bin/python3 scripts/reference/selfcheck.py      # prints a summary, exits 1 on failure
"""

import itertools
import os
import sys
from fractions import Fraction

import numpy as np
import networkx as nx
from networkx.algorithms.flow import edmonds_karp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attnflow_reference as ref  # noqa: E402

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def random_attention(rng, L, H, n, causal=False):
    logits = rng.normal(size=(L, H, n, n)) * rng.uniform(0.5, 4.0)
    if causal:
        logits = np.where(np.triu(np.ones((n, n)), 1) > 0, -np.inf, logits)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def loop_fuse(W, fusion, heads):
    L, H, n, _ = W.shape
    heads = list(range(H)) if heads is None else heads
    F = np.zeros((L, n, n))
    for l in range(L):
        for i in range(n):
            row = []
            for j in range(n):
                vals = [W[l, h, i, j] for h in heads]
                row.append({"mean": sum(vals) / len(vals), "max": max(vals), "min": min(vals)}[fusion])
            s = sum(row)
            F[l, i] = [v / s if s > 0 else 0.0 for v in row]
    return F


def exact_flow(A, layer, i, j):
    """Max flow with Fraction capacities (exact arithmetic on the float inputs)."""
    n = A.shape[-1]
    G = nx.DiGraph()
    for l in range(1, layer + 1):
        for a in range(n):
            for b in range(n):
                if A[l - 1, a, b] > 0:
                    G.add_edge((l, a), (l - 1, b), capacity=Fraction(float(A[l - 1, a, b])))
    if (layer, i) not in G or (0, j) not in G:
        return Fraction(0)
    return nx.maximum_flow_value(G, (layer, i), (0, j), flow_func=edmonds_karp)


def main():
    rng = np.random.default_rng(20240601)
    checked = 0
    for trial in range(40):
        L = int(rng.integers(1, 5))
        H = int(rng.integers(1, 4))
        n = int(rng.integers(2, 7))
        W = random_attention(rng, L, H, n, causal=bool(trial % 2))
        if trial % 5 == 0:
            W[0, 0, n - 1] = 0.0  # a zero row in one head
            if H == 1:
                W[0, 0, n - 1, 0] = 0.0
        if trial % 7 == 0:
            W = np.round(W * 4) / 4  # ties
        fusion = ["mean", "max", "min"][trial % 3]
        heads = None if H == 1 or trial % 4 else [H - 1]
        alpha = [0.3, 0.5, 1.0][trial % 3]
        F = ref.fuse(W, False, fusion, heads)
        check(np.allclose(F, loop_fuse(W, fusion, heads), atol=1e-15, rtol=0), f"fusion trial {trial}")
        A = ref.mix_residual(F, alpha)
        for l in range(L):
            for r in range(n):
                row = alpha * F[l, r] + (1 - alpha) * (np.arange(n) == r)
                s = row.sum()
                check(np.allclose(A[l, r], row / s if s > 0 else 0 * row, atol=1e-15, rtol=0),
                      f"residual trial {trial}")
        R = ref.rollout(A)
        # rollout element-wise as an explicit path sum for small cases
        if L <= 3 and n <= 4:
            for i, j in itertools.product(range(n), range(n)):
                total = 0.0
                for path in itertools.product(range(n), repeat=L - 1):
                    nodes = (i,) + path[::-1] + (j,) if L > 1 else (i, j)
                    p = 1.0
                    for step in range(L):
                        p *= A[L - 1 - step, nodes[step], nodes[step + 1]]
                    total += p
                check(abs(R[L - 1, i, j] - total) < 1e-14, f"rollout paths trial {trial}")
        layers = list(range(1, L + 1))
        flow = ref.attention_flow(A, layers, list(range(n)), normalize=False)
        colsum = A[0].sum(axis=0)
        for a, layer in enumerate(layers):
            for i in range(n):
                for j in range(n):
                    f = flow[a, i, j]
                    check(-1e-15 <= f <= min(1.0, colsum[j]) + 1e-12, f"flow bound trial {trial}")
                    check(R[layer - 1, i, j] <= f + 1e-12, f"rollout <= flow trial {trial} {layer} {i} {j}")
                    if layer == 1:
                        check(abs(f - A[0, i, j]) < 1e-15, f"L=1 closed form trial {trial}")
                    if layer == 2:
                        closed = sum(min(A[1, i, k], A[0, k, j]) for k in range(n))
                        check(abs(f - closed) < 1e-14, f"L=2 closed form trial {trial}: {f} vs {closed}")
                    if layer >= 3 and (i + j + trial) % 3 == 0:
                        exact = exact_flow(A, layer, i, j)
                        check(abs(f - float(exact)) < 1e-14,
                              f"exact flow trial {trial} layer {layer} ({i},{j}): {f} vs {float(exact)}")
                        G = ref.layered_graph(A, layer)
                        ek = nx.maximum_flow_value(G, (layer, i), (0, j), flow_func=edmonds_karp)
                        check(abs(f - ek) < 1e-14, f"edmonds_karp trial {trial}")
                        checked += 1
        normalized = ref.attention_flow(A, layers, list(range(n)), normalize=True)
        sums = normalized.sum(axis=-1)
        check(np.all((np.abs(sums - 1) < 1e-12) | (sums == 0)), f"normalised rows trial {trial}")
    print(f"selfcheck: 40 random cases, {checked} flows checked exactly; {len(failures)} failures")
    for message in failures[:20]:
        print("  FAIL", message)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
