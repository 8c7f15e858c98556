"""Writes a float32 .npy [L=12, H=12, n=128, n=128] of attention shaped like a trained encoder's:
in layers FIRST..LAST most heads put most of each row on token 0 ([CLS]) and token n-1 ([SEP]);
the other heads attend to the previous, next or own token, or are sharpened noise. Used for the
one-row timings of bench/README.md ("This version", real-1-12 = layers 1-12, real-2-12 = 2-12)
and bench/native/NOTES.md. Debian python3-numpy; run with /usr/bin/python3:
    python3 bench/realistic.py FIRST LAST OUT.npy
"""
import numpy as np, sys
L, H, n = 12, 12, 128
focus = range(int(sys.argv[1]), int(sys.argv[2]) + 1)
rng = np.random.default_rng(0)
out = np.zeros((L, H, n, n), np.float32)
def softmax(x): x = x - x.max(-1, keepdims=True); e = np.exp(x); return e / e.sum(-1, keepdims=True)
idx = np.arange(n)
for l in range(L):
    p = rng.uniform(0.5, 0.9)
    for h in range(H):
        logits = rng.normal(0, 1, (n, n))
        if (l + 1) in focus and rng.random() < p:
            logits[:, 0] += rng.uniform(5, 7); logits[:, n - 1] += rng.uniform(5, 7)
        else:
            kind = rng.integers(4)
            if kind == 0: logits[idx[1:], idx[1:] - 1] += 4
            elif kind == 1: logits[idx[:-1], idx[:-1] + 1] += 4
            elif kind == 2: logits[idx, idx] += 4
            else: logits *= 1.5
        out[l, h] = softmax(logits)
np.save(sys.argv[3], out)
