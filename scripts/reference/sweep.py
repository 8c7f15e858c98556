#!/usr/bin/env python3
"""Random inputs, random options: the attnflow CLI against the independent reference.

    /usr/bin/python3 scripts/reference/sweep.py [--seed S] [--cases N] [--tol 1e-9] [--keep DIR]

Each case draws a small attention tensor (1-5 layers, 1-4 heads, 1-12 tokens) of one kind (flat,
peaky, causal, tied, sparse, a zero row, one-hot rows), writes it in one of the formats both
sides read (.npy float32/float64, JSON, Hugging Face JSON, safetensors; PyTorch .pt as a dict or
a tuple of per-layer tensors when PyTorch is installed), draws options (fusion, heads, alpha,
discard, layers, --unnormalized, --receptive-field) and runs compare.py on it: raw, rollout and
flow must agree within --tol. Prints one line per case; exit status 0 if all agree, 1 if not.
The inputs are written to a temporary folder (kept with --keep DIR).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(HERE, "compare.py")
KINDS = ["flat", "peaky", "causal", "ties", "sparse", "zero-row", "one-hot"]
FORMATS = ["npy64", "npy32", "json", "hf-json", "safetensors", "pt-dict", "pt-tuple"]


def random_attention(rng, L, H, n, kind):
    """Row-stochastic [L][H][n][n] weights (a row may be all zero) of the given kind."""
    if kind == "one-hot":
        W = np.zeros((L, H, n, n))
        picks = rng.integers(0, n, size=(L, H, n))
        np.put_along_axis(W, picks[..., None], 1.0, axis=-1)
        return W
    W = rng.random((L, H, n, n))
    if kind == "peaky":
        W = W ** 6
    elif kind == "causal":
        W = W * np.tril(np.ones((n, n)))
    elif kind == "ties":
        W = np.round(W * 3) / 3  # exact ties, and zeros
    elif kind == "sparse":
        W = W * (rng.random(W.shape) < 0.3)
    elif kind == "zero-row":
        W[:, :, rng.integers(0, n)] = 0.0
    sums = W.sum(-1, keepdims=True)
    return np.divide(W, sums, out=np.zeros_like(W), where=sums > 0)


def write_safetensors(path, W, tokens):
    data = W.astype("<f8").tobytes()
    header = json.dumps({
        "attentions": {"dtype": "F64", "shape": list(W.shape), "data_offsets": [0, len(data)]},
        "__metadata__": {"tokens": json.dumps(tokens)},
    }).encode("utf-8")
    with open(path, "wb") as handle:
        handle.write(len(header).to_bytes(8, "little") + header + data)


def write_input(folder, case, fmt, W, tokens):
    base = os.path.join(folder, f"case{case}")
    if fmt == "npy64":
        np.save(base + ".npy", W)
        return base + ".npy"
    if fmt == "npy32":
        np.save(base + ".npy", W.astype(np.float32))
        return base + ".npy"
    if fmt in ("json", "hf-json"):
        attentions = W[:, None].tolist() if fmt == "hf-json" else W.tolist()
        with open(base + ".json", "w", encoding="utf-8") as handle:
            json.dump({"tokens": tokens, "attentions": attentions}, handle)
        return base + ".json"
    if fmt == "safetensors":
        write_safetensors(base + ".safetensors", W, tokens)
        return base + ".safetensors"
    import torch
    if fmt == "pt-dict":
        torch.save({"attentions": torch.tensor(W), "tokens": tokens}, base + ".pt")
    else:  # as torch.save(outputs.attentions): one [1, H, n, n] tensor per layer
        torch.save(tuple(torch.tensor(W[l][None]) for l in range(W.shape[0])), base + ".pt")
    return base + ".pt"


def random_options(rng, H):
    options = []
    if rng.random() < 0.3:
        options += ["--fusion", str(rng.choice(["max", "min"]))]
    if rng.random() < 0.2 and H > 1:
        heads = sorted(set(int(h) for h in rng.integers(0, H, size=2)))
        options += ["--heads", ",".join(map(str, heads))]
    if rng.random() < 0.4:
        options += ["--alpha", str(rng.choice([0, 1, 0.3, 0.9]))]
    if rng.random() < 0.2:
        options += ["--discard", str(rng.choice([0.2, 0.5, 0.9]))]
    if rng.random() < 0.5:
        options += ["--layers", "all"]
    if rng.random() < 0.2:
        options.append("--unnormalized")
    if rng.random() < 0.2:
        options.append("--receptive-field")
    return options


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--tol", default="1e-9")
    parser.add_argument("--keep", help="write the inputs here and keep them")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
        formats = FORMATS
    except ImportError:
        formats = [f for f in FORMATS if not f.startswith("pt-")]
        print("sweep: PyTorch is not installed, so no .pt inputs")
    folder = args.keep or tempfile.mkdtemp(prefix="attnflow-sweep-")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    failures = 0
    try:
        for case in range(args.cases):
            L, H, n = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(1, 13))
            kind = str(rng.choice(KINDS))
            fmt = str(rng.choice(formats))
            W = random_attention(rng, L, H, n, kind)
            # Token text the page must never treat as HTML.
            path = write_input(folder, case, fmt, W, [f"t{i}<b>" for i in range(n)])
            options = random_options(rng, H)
            proc = subprocess.run([sys.executable, COMPARE, path, "--python", sys.executable,
                                   "--tol", args.tol] + options,
                                  cwd=ROOT, capture_output=True, text=True)
            verdict = "PASS" if proc.returncode == 0 else "FAIL"
            print(f"case {case}: L={L} H={H} n={n} {kind} {fmt} {' '.join(options)}: {verdict}",
                  flush=True)
            if proc.returncode != 0:
                failures += 1
                print(proc.stdout + proc.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"sweep: {args.cases - failures} of {args.cases} cases agree within {args.tol}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
