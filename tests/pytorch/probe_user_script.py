#!/usr/bin/env python3
"""CTest probe_user_script: the PyTorch probe as a user meets it. A training script written
as a user would write one (below, run as its own process with the probe importable from the
source tree, as docs/PYTORCH.md says) trains an MLP and a CNN, each an nn.Sequential, in
plain fp32 on the CPU, with the probe judging the tensors against fp16 and logging values of
the script's own (probe.log). Its records are then checked for what issue 68 found wrong:

  labels    the training is recorded as it ran (settings recipe "fp32", source.as_run
            "fp32") and the format the telemetry judged apart (source.judged_format "fp16");
            the display name says both; plab report's HTML says it ran as fp32, never AMP.
  names     an nn.Sequential's modules are named by their path and type ("0 (Linear)",
            "3 (Conv2d)"), for every module that holds parameters and no other.
  memory    on the CPU the record holds no memory figure (not a 0 that would read as
            "0 B"), and plab report's table says "not measured".
  scalars   every probe.log(name, value) is in the record's "scalars" at the step it was
            logged, a NaN as null; plab report --csv writes them to <run>-scalars.csv, equal
            to the script's own values; a bad name or value is refused with ValueError.

Usage: probe_user_script.py --plab PLAB --work DIR. Exit 77 without PyTorch (a skip).
"""

import argparse
import csv
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", "python"))

try:
    import torch  # noqa: F401  (the script below needs it; skip here when it is missing)
except ImportError as e:
    print(f"SKIP: PyTorch is not installed ({e}); scripts/setup.sh --tests installs it")
    sys.exit(77)

# What a user writes: their own models, data and loop; the probe added in four lines.
USER_SCRIPT = r'''
import json, math, sys
import torch
from torch import nn
from precision_lab import Probe

torch.manual_seed(0)
x = torch.randn(256, 1, 28, 28)
y = (x.mean(dim=(1, 2, 3)) > 0).long() + 2 * (x[:, :, :14].mean(dim=(1, 2, 3)) > 0).long()

models = {
    "mlp": nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 4)),
    "cnn": nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 4)),
}
logged = {}
for kind, model in models.items():
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    values = logged[kind] = []
    with Probe(model, sys.argv[1] + f"/{kind}.plab.json", fmt="fp16", every=5, optimizer=opt,
               name=f"user {kind}") as probe:
        for step in range(1, 21):
            batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
            probe.begin_step()
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
            opt.step()
            probe.end_step(loss, batch=32)
            probe.log("grad_norm", norm)                  # a tensor
            values.append([step, "grad_norm", float(norm)])
            if step % 10 == 0:
                probe.log("lr", opt.param_groups[0]["lr"])  # a float
                values.append([step, "lr", opt.param_groups[0]["lr"]])
        probe.log("diverged?", float("nan"))              # not finite: null
        values.append([20, "diverged?", None])
        with torch.no_grad():
            accuracy = (model(x).argmax(1) == y).float().mean().item()
        probe.evaluate(accuracy)
        refused = []
        for name, value in (("", 1.0), ("x" * 201, 1.0), (3, 1.0), ("text", "1.5"), ("many", torch.ones(2))):
            try:
                probe.log(name, value)
            except ValueError as e:
                refused.append(str(e))
        values.append(["refused", len(refused)])
json.dump(logged, open(sys.argv[1] + "/logged.json", "w"))
'''

failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plab", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    script = os.path.join(work, "train_mine.py")
    with open(script, "w") as f:
        f.write(USER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=SOURCE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, script, work], capture_output=True, text=True, env=env, cwd=work)
    check(run.returncode == 0, "the user's script trains with the probe" + ("" if run.returncode == 0 else ":\n" + run.stderr))
    if run.returncode != 0:
        sys.exit(1)
    logged = json.load(open(os.path.join(work, "logged.json")))

    expected_layers = {"mlp": {"1 (Linear)", "3 (Linear)"},
                       "cnn": {"0 (Conv2d)", "3 (Conv2d)", "7 (Linear)"}}
    for kind in ("mlp", "cnn"):
        path = os.path.join(work, f"{kind}.plab.json")
        record = json.load(open(path))
        source, settings = record["source"], record["settings"]
        check(settings["recipe"] == "fp32" and source["as_run"] == "fp32" and source["judged_format"] == "fp16",
              f"{kind}: recorded as it ran (fp32) and judged against fp16: {settings['recipe']}, {source}")
        check("recipe" not in record, f"{kind}: no recipe block (the settings say the recipe): {list(record)}")
        layers = {e["layer"] for t in record["telemetry"] for e in t["layers"]}
        check(layers == expected_layers[kind], f"{kind}: modules named by path and type: {sorted(layers)}")
        peak = record["memory"]["peak"]
        check("total" not in peak and not record["memory"]["samples"],
              f"{kind}: no memory figure on the CPU (not a 0): {record['memory']}")

        wanted = [v for v in logged[kind] if v[0] != "refused"]
        got = [[s["step"], s["name"], s["value"]] for s in record.get("scalars", [])]
        same = len(got) == len(wanted) and all(
            g[:2] == w[:2] and (g[2] is None if w[2] is None else g[2] is not None and math.isclose(g[2], w[2], rel_tol=1e-12))
            for g, w in zip(got, wanted))
        check(same, f"{kind}: the record's scalars are the script's {len(wanted)} logged values, NaN as null "
                    f"(first {got[:2]}, last {got[-1:]})")
        refused = next(v[1] for v in logged[kind] if v[0] == "refused")
        check(refused == 5, f"{kind}: an empty, overlong or non-text name, text and a two-element tensor are refused "
                            f"({refused} of 5)")

        # The lab's readers: the summary calls it fp32 and memory not measured; the CSV holds the values.
        out = os.path.join(work, f"{kind}-report")
        page = os.path.join(work, f"{kind}-report.html")
        p = subprocess.run([args.plab, "report", path, "--csv", out, "--html", page], capture_output=True, text=True)
        check(p.returncode == 0, f"{kind}: plab report --csv --html reads the record" + ("" if p.returncode == 0 else ": " + p.stderr))
        check("not measured" in p.stdout, f"{kind}: plab report's table says memory was not measured:\n{p.stdout}")
        text = open(page).read() if os.path.exists(page) else ""
        text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.S)
        text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))
        check("AMP" not in text and "which ran as fp32" in text and "recipe (as run) PyTorch, fp32" in text,
              f"{kind}: the HTML report says the run ran as fp32 and names no AMP")
        files = sorted(os.listdir(out)) if os.path.isdir(out) else []
        scalar_files = [f for f in files if f.endswith("-scalars.csv")]
        check(len(scalar_files) == 1, f"{kind}: a -scalars.csv beside the other tables: {files}")
        if scalar_files:
            rows = list(csv.reader(open(os.path.join(out, scalar_files[0]), newline="")))
            table = [[int(r[1]), r[2], float(r[3]) if r[3] else None] for r in rows[1:]]
            check(rows[0] == ["run", "step", "name", "value"] and table == [[s, n, v] for s, n, v in got],
                  f"{kind}: the CSV's rows are the record's scalars ({len(table)} rows)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
