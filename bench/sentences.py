"""Writes a float32 .npy [L=12, H=12, n=128, n=128] of attention shaped like a trained encoder's
on a paragraph of 8 sentences, unlike bench/realistic.py's: from layer 3 some heads put much of
each row on [CLS] (token 0), [SEP] (token n-1) and the sentence ends (7 random tokens); others
attend to the previous or next token, or within the sentence, or are noise; head temperatures vary.
A file the solver was not tuned on, for the one-row CLI check of bench/README.md. Debian
python3-numpy; run with /usr/bin/python3:
    python3 bench/sentences.py SEED OUT.npy
"""
import numpy as np, sys
L, H, n = 12, 12, 128
rng = np.random.default_rng(int(sys.argv[1]))
ends = np.sort(rng.choice(np.arange(8, n - 2), 7, replace=False))
sinks = [0, n - 1, *ends]
sentence = np.searchsorted(ends, np.arange(n))
idx = np.arange(n)
def softmax(x): x = x - x.max(-1, keepdims=True); e = np.exp(x); return e / e.sum(-1, keepdims=True)
out = np.zeros((L, H, n, n), np.float32)
for l in range(L):
    for h in range(H):
        logits = rng.normal(0, rng.uniform(0.5, 2.0), (n, n))
        kind = rng.integers(5)
        if kind == 0 and l >= 2:
            for s in sinks: logits[:, s] += rng.uniform(2, 6)
        elif kind == 1: logits[idx[1:], idx[1:] - 1] += rng.uniform(2, 6)
        elif kind == 2: logits[idx[:-1], idx[:-1] + 1] += rng.uniform(2, 6)
        elif kind == 3: logits += 2.0 * (sentence[:, None] == sentence[None, :])
        out[l, h] = softmax(logits)
np.save(sys.argv[2], out)
