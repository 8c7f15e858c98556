#!/usr/bin/env python3
"""Runs the attnflow CLI and the independent reference on one file and compares the scores.

    /usr/bin/python3 scripts/reference/compare.py FILE [--methods raw,rollout,flow]
        [--fusion mean|max|min] [--heads 0,3] [--alpha A] [--discard R] [--layers last|all|1,4]
        [--rows all|0,5] [--unnormalized] [--receptive-field] [--batch B] [--tol 1e-6]
        [--cli "node web/cli.mjs"]

For each method it runs `node web/cli.mjs METHOD FILE <options>` (from the repository root) and
scripts/reference/attnflow_reference.py with the same options, checks that tokens, layers, rows
and the shape of the scores agree, and prints the max absolute difference of the scores and where
it occurs. Exit status: 0 if every method agrees within --tol, 1 if not, 2 if a run failed.
A user error reported by both sides (exit code 2 from both) counts as agreement. FILE may also
be a golden file of tests/fixtures/golden/ (its "input" member is what both sides read).
"""

import argparse
import atexit
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(HERE, "attnflow_reference.py")


def run(command):
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return proc, time.perf_counter() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--methods", default="raw,rollout,flow")
    parser.add_argument("--fusion")
    parser.add_argument("--heads")
    parser.add_argument("--alpha")
    parser.add_argument("--discard")
    parser.add_argument("--layers")
    parser.add_argument("--rows")
    parser.add_argument("--unnormalized", action="store_true")
    parser.add_argument("--receptive-field", action="store_true")
    parser.add_argument("--batch")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--cli", default="node web/cli.mjs", help="command that runs the attnflow CLI")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the reference")
    args = parser.parse_args(argv)

    path = os.path.abspath(args.file)
    if path.endswith(".json"):
        # A golden file of tests/fixtures/golden/ holds its input under "input": give the CLI
        # just that part, as a user's file.
        with open(path, "rb") as handle:
            head = handle.read(64)
        if head.lstrip().startswith(b'{"case"'):
            with open(path, encoding="utf-8") as handle:
                doc = json.load(handle)
            temp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
            json.dump(doc["input"], temp)
            temp.close()
            atexit.register(os.unlink, temp.name)
            path = temp.name
    options = []
    for name in ("fusion", "heads", "alpha", "discard", "layers", "rows", "batch"):
        value = getattr(args, name)
        if value is not None:
            options += [f"--{name}", value]
    if args.unnormalized:
        options.append("--unnormalized")
    if args.receptive_field:
        options.append("--receptive-field")

    worst_overall = 0.0
    status = 0
    for method in args.methods.split(","):
        cli_cmd = shlex.split(args.cli) + [method, path] + options
        ref_cmd = [args.python, REFERENCE, method, path] + options
        cli, cli_s = run(cli_cmd)
        ref, ref_s = run(ref_cmd)
        label = f"{method:8s}"
        if cli.returncode == 2 and ref.returncode == 2:
            print(f"{label} both rejected the input: cli: {cli.stderr.strip()} | reference: {ref.stderr.strip()}")
            continue
        if cli.returncode != 0 or ref.returncode != 0:
            print(f"{label} FAILED RUN: cli exit {cli.returncode} ({cli.stderr.strip()[:300]}); "
                  f"reference exit {ref.returncode} ({ref.stderr.strip()[:300]})")
            status = 2
            continue
        a = json.loads(cli.stdout)
        b = json.loads(ref.stdout)
        problems = []
        for key in ("method", "tokens", "layers", "rows"):
            if a.get(key) != b.get(key):
                problems.append(f"{key} differ: cli {a.get(key)!r} vs reference {b.get(key)!r}")
        sa = np.asarray(a["scores"], dtype=np.float64)
        sb = np.asarray(b["scores"], dtype=np.float64)
        if sa.shape != sb.shape:
            problems.append(f"scores shape differs: cli {sa.shape} vs reference {sb.shape}")
        if problems:
            print(f"{label} MISMATCH: " + "; ".join(problems))
            status = max(status, 1)
            continue
        diff = np.abs(sa - sb)
        worst = float(diff.max()) if diff.size else 0.0
        worst_overall = max(worst_overall, worst)
        where = np.unravel_index(int(diff.argmax()), diff.shape) if diff.size else None
        verdict = "ok" if worst <= args.tol else "TOO FAR"
        detail = ""
        if where is not None:
            la, ro, tok = (int(x) for x in where)
            detail = (f" at layer {b['layers'][la]} row {b['rows'][ro]} token {tok}"
                      f" (cli {sa[where]!r}, reference {sb[where]!r})")
        print(f"{label} max |diff| = {worst:.3e}{detail}  {verdict}  [cli {cli_s:.2f} s, reference {ref_s:.2f} s]")
        if worst > args.tol:
            status = max(status, 1)
    print(f"overall max |diff| = {worst_overall:.3e}, tolerance {args.tol:g}: "
          f"{'PASS' if status == 0 else 'FAIL'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
