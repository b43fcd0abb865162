#!/usr/bin/env python3
"""CTest probe_pytorch: the precision_lab probe (python/precision_lab) on a PyTorch run of
small-cnn writes a record that agrees with the lab's own record of the same run (the same
initial weights, moved with --init-weights, and the same batches, --write-batches), and
that the lab's readers take.

  loss        a PyTorch fp32 run with the probe against `plab train --recipe fp32`, plain
              SGD, 20 steps: every step's loss within 1e-5 relative (the bound the golden
              test holds for plain SGD, docs/PYTORCH.md).
  underflow   the probe measuring the same PyTorch run against fp16, against the lab's
              `--recipe amp-fp16 --loss-scale off` run, which rounds its gradients into fp16
              itself: per layer, the share of nonzero weight gradients and of input
              gradients (activation_grad) flushed to zero over the telemetry steps both
              recorded, within 0.5 point. (The two runs' gradients
              are not bit-equal: the lab's come from fp16 products; their distributions are
              what is compared.)
  bf16        torch.autocast("cpu", bfloat16) with the probe measuring bf16, against the lab's
              amp-bf16 run: every loss within 2^-7 relative (NOT RUN, said so, where this
              PyTorch cannot run a bf16 convolution: CPUs without AVX-512).
  fp8         the probe's unscaled E4M3/E5M2 counts against `plab convert`, chunk by chunk.
  readers     `plab report --json` and `plab export --tensorboard` read the probe's record.
  files       (issue 66) the record is valid JSON with NaN losses, rates and accuracies (null,
              as the lab writes them), and plab reads it; a FIFO as the record is refused and
              left a FIFO; the record's mode is 0644 less the umask; `with Probe(...)`
              closes the record as failed when an exception escapes and releases the lock,
              so a new Probe of the same process writes the path, as it does after a Probe
              is dropped unclosed or fails in its __init__.

Usage: probe_pytorch.py --plab PLAB --work DIR. Exit 77 without PyTorch or data (a skip).
"""

import argparse
import json
import math
import os
import gc
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
    import torch.nn.functional as F
    import plab_torch as pt
    from precision_lab import Probe
except ImportError as e:
    print(f"SKIP: PyTorch is not installed ({e}); scripts/setup.sh --tests installs it")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def data_dir():
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.environ.get("PLAB_DATA_DIR") or os.path.join(base, "precision-lab", "data")


def plab_train(plab, args):
    p = subprocess.run([plab, "train", "--quiet", "--threads", "1", "--arithmetic", "exact"] + args,
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
    return p.returncode


def flushed_shares(record, steps, kind):
    """layer -> share of the nonzero finite values of `kind` flushed to 0 over the given steps."""
    totals = {}
    for t in record["telemetry"]:
        if t["step"] not in steps:
            continue
        for e in t["layers"]:
            if e["kind"] != kind or e["stats"]["count"] == 0:
                continue
            st = e["stats"]
            u = totals.setdefault(e["layer"].split(" (")[0], [0, 0])   # the probe's "conv1 (Conv2d)" is the lab's conv1
            u[0] += st["underflow"]
            u[1] += st["count"] - st["zeros_in"] - st["nan"] - st["inf_in"]
    return {layer: u / n for layer, (u, n) in totals.items() if n}


def strict_json(path):
    """The file parsed as JSON allows it: no NaN, Infinity or -Infinity (Python's json takes them)."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    with open(path) as f:
        return json.loads(f.read(), parse_constant=refuse)


def tiny_model():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def one_step(probe, model, loss=None):
    probe.begin_step()
    out = model(torch.randn(2, 4)).sum()
    out.backward()
    probe.end_step(out if loss is None else loss, batch=2)


def check_record_files(plab, work):
    """Issue 66 item 4: the probe writes valid, readable records, and leaves no lock behind."""
    folder = os.path.join(work, "files")
    os.makedirs(folder)
    lock_of = lambda record: os.path.join(folder, "." + os.path.basename(record) + ".lock")
    leftovers = lambda: sorted(n for n in os.listdir(folder) if n.endswith(".tmp") or n.startswith(".probe-"))

    # NaN in the loss, the learning rate, the accuracy and evaluate()'s default test loss:
    # null in the file, as the lab's writer writes them, and the lab reads the record.
    nan_file = os.path.join(folder, "nan.plab.json")
    model = tiny_model()
    probe = Probe(model, nan_file, every=1)
    one_step(probe, model, loss=float("nan"))
    probe.begin_step()
    probe.end_step(0.25, batch=2, lr=float("nan"))
    probe.evaluate(0.5)                        # test_loss not given: NaN
    probe.evaluate(float("nan"), float("inf"))
    try:
        probe.evaluate(95.0)                   # a percentage, not a fraction
        refused = False
    except ValueError:
        refused = True
    probe.close()
    try:
        record = strict_json(nan_file)
        why = ""
    except ValueError as e:
        record, why = None, str(e)
    check(record is not None, "issue 66: a record with NaN losses, rates and accuracies is strict JSON" +
          (": " + why if why else ""))
    record = record or json.load(open(nan_file))   # Python's json reads NaN: the values below are shown
    evals, summary = record["evals"], record["summary"]
    check(record["steps"][0]["loss"] is None and record["steps"][1]["lr"] is None
          and [(e["test_accuracy"], e["test_loss"]) for e in evals] == [(0.5, None), (None, None)]
          and summary["test_accuracy"] is None and summary["best_test_accuracy"] == 0.5,
          f"issue 66: NaN loss, lr, accuracy and the default test_loss written as null: steps "
          f"{[(s['loss'], s['lr']) for s in record['steps']]}, evals "
          f"{[(e['test_accuracy'], e['test_loss']) for e in evals]}")
    check(refused, "issue 66: evaluate(95.0), an accuracy outside 0..1, is refused (ValueError)")
    report = os.path.join(folder, "report")
    p = subprocess.run([plab, "report", nan_file, "--json", report], capture_output=True, text=True)
    copies = [os.path.join(report, n) for n in os.listdir(report)] if os.path.isdir(report) else []
    try:
        copied = bool(copies) and all(strict_json(c) is not None for c in copies)
    except ValueError:
        copied = False
    check(p.returncode == 0 and copied, "issue 66: plab report --json reads the record with NaNs, and its copy is "
          "strict JSON" + ("" if p.returncode == 0 else ": " + p.stderr.strip()))

    # A FIFO given as the record: refused at construction, left a FIFO, no lock left.
    fifo = os.path.join(folder, "fifo.plab.json")
    os.mkfifo(fifo)
    model = tiny_model()
    try:
        Probe(model, fifo).close()
        why = "accepted"
    except ValueError as e:
        why = str(e)
    check("FIFO" in why and stat.S_ISFIFO(os.lstat(fifo).st_mode) and not os.path.exists(lock_of(fifo)),
          f"issue 66: a FIFO as the record is refused and left a FIFO ({why})")

    # The record's mode: 0644 less the umask, as any new file (not mkstemp's 0600).
    modes = []
    for umask in (0o022, 0o077):
        mode_file = os.path.join(folder, f"mode-{umask:03o}.plab.json")
        old = os.umask(umask)
        try:
            probe = Probe(tiny_model(), mode_file)
            probe.close()
        finally:
            os.umask(old)
        modes.append(stat.S_IMODE(os.stat(mode_file).st_mode))
    check(modes == [0o644, 0o600], "issue 66: the record is mode 0644 under umask 022 and 0600 under umask 077: "
          + ", ".join(f"{m:o}" for m in modes))

    # An exception inside `with Probe(...)`: the record says failed and names it, the lock
    # is gone, and a new Probe of this same process (a notebook's next cell) writes the path.
    failed_file = os.path.join(folder, "failed.plab.json")
    model = tiny_model()
    try:
        with Probe(model, failed_file, every=1) as probe:
            one_step(probe, model)
            raise ZeroDivisionError("the data ran out")
    except ZeroDivisionError:
        pass
    except Exception as e:   # a probe without __enter__/__exit__
        print(f"      with Probe(...): {type(e).__name__}: {e}")
    summary = json.load(open(failed_file))["summary"]
    check(summary["status"] == "failed" and "ZeroDivisionError: the data ran out" in summary["message"]
          and not os.path.exists(lock_of(failed_file)),
          f"issue 66: an exception inside `with Probe(...)` closes the record as failed, naming it, and removes the "
          f"lock: {summary['status']}, {summary['message']!r}")
    try:
        with Probe(model, failed_file, every=1) as probe:
            one_step(probe, model)
        status, why = json.load(open(failed_file))["summary"]["status"], ""
    except Exception as e:
        status, why = None, f"{type(e).__name__}: {e}"
    check(status == "completed" and not os.path.exists(lock_of(failed_file)),
          f"issue 66: a new Probe of the same process writes the record after the failed one: {status or why}")
    model = tiny_model()
    try:
        with Probe(model, os.path.join(folder, "stopped.plab.json"), every=1) as probe:
            one_step(probe, model)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    except Exception as e:
        print(f"      with Probe(...): {type(e).__name__}: {e}")
    summary = json.load(open(os.path.join(folder, "stopped.plab.json")))["summary"]
    check(summary["status"] == "stopped", f"issue 66: Ctrl-C inside `with Probe(...)` closes the record as stopped: "
          f"{summary['status']}")

    # A Probe dropped unclosed: while it is open a second Probe of the path is refused; once
    # it is garbage, its lock is gone and a new Probe writes the path.
    dropped_file = os.path.join(folder, "dropped.plab.json")
    model = tiny_model()
    probe = Probe(model, dropped_file, every=1)
    one_step(probe, model)
    try:
        Probe(model, dropped_file).close()
        second = "accepted"
    except RuntimeError:
        second = "refused"
    del probe
    gc.collect()
    released = not os.path.exists(lock_of(dropped_file))
    try:
        probe = Probe(model, dropped_file)
        one_step(probe, model)
        probe.close()
        again = "written"
    except Exception as e:
        again = f"{type(e).__name__}: {e}"
    check(second == "refused" and released and again == "written",
          f"issue 66: a second Probe of an open Probe's path is {second}; once that one is garbage, its lock "
          f"{'is gone' if released else 'stays'} and a new Probe: {again}")

    # A Probe whose __init__ fails after it took the lock (settings json cannot write): no
    # lock, no temporary file and no hooks left on the model.
    broken_file = os.path.join(folder, "broken.plab.json")
    model = tiny_model()
    try:
        Probe(model, broken_file, settings={"data": object()})
        why = "accepted"
    except TypeError as e:
        why = str(e)
    hooks = sum(len(m._forward_hooks) for m in model.modules())
    check(not os.path.exists(lock_of(broken_file)) and not leftovers() and hooks == 0,
          f"issue 66: a Probe whose __init__ fails ({why}) leaves no lock, no temporary ({leftovers()}) and no hooks "
          f"({hooks})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plab", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    folder = os.path.join(data_dir(), "mnist")
    if not os.path.isdir(folder):
        folder = os.path.join(data_dir(), "mnist-10k")
    if not os.path.isdir(folder):
        print(f"SKIP: no MNIST data in {data_dir()}")
        sys.exit(77)
    images = pt.read_idx(os.path.join(folder, "train-images-idx3-ubyte.gz"))
    labels = pt.read_idx(os.path.join(folder, "train-labels-idx1-ubyte.gz"))

    torch.manual_seed(21)
    model = pt.make_model("small-cnn")
    init = os.path.join(work, "init.safetensors")
    pt.save_safetensors(init, model.state_dict())
    batches = os.path.join(work, "batches.txt")
    common = ["--model", "small-cnn", "--init-weights", init, "--data-dir", data_dir(), "--optimizer", "sgd",
              "--momentum", "0", "--lr", "0.01", "--batch", "512", "--max-steps", "20", "--histogram-every", "5"]
    lab_fp32 = os.path.join(work, "lab-fp32.json")
    lab_fp16 = os.path.join(work, "lab-amp-fp16.json")
    check(plab_train(args.plab, common + ["--recipe", "fp32", "--write-batches", batches, "--out", lab_fp32]) == 0,
          "plab train --recipe fp32 exits 0")
    check(plab_train(args.plab, common + ["--recipe", "amp-fp16", "--loss-scale", "off", "--read-batches", batches,
                                          "--out", lab_fp16]) == 0, "plab train --recipe amp-fp16 exits 0")
    if failures:
        sys.exit(1)

    # The same run in PyTorch (fp32, plain SGD), with the probe measuring against fp16.
    probe_file = os.path.join(work, "probe.plab.json")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    probe = Probe(model, probe_file, fmt="fp16", every=5, optimizer=opt, name="PyTorch small-cnn",
                  settings={"model": "small-cnn", "optimizer": "sgd", "lr": 0.01, "momentum": 0.0, "batch": 512})
    lock = os.path.join(work, ".probe.plab.json.lock")
    check(open(lock).read().split()[0] == str(os.getpid()), "the probe holds the lab's writer lock while it records")
    for idx in pt.read_batches(batches):
        x, y = pt.batch_tensors(images, labels, idx)
        probe.begin_step()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        probe.end_step(loss, batch=len(idx))
    probe.close()
    check(not os.path.exists(lock), "close() removes the lock once the record is complete")
    ours = json.load(open(probe_file))
    lab = json.load(open(lab_fp32))
    diffs = [abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(ours["steps"], lab["steps"])]
    print(f"      largest relative loss difference {max(diffs):.2e}")
    check(len(ours["steps"]) == 20 and max(diffs) <= 1e-5, "every step's loss within 1e-5 relative of the lab's fp32 run")
    # Issue 68 item 3: what ran apart from what was measured: an fp32 run judged against fp16
    # is recorded as fp32 (not "AMP FP16"), its telemetry as fp16's judgement, and the report
    # words it so.
    check(ours["settings"]["recipe"] == "fp32" and ours["settings"]["loss_scale"] == "off",
          f"an fp32 PyTorch run is recorded as fp32: {ours['settings']}")
    check(ours["source"]["as_run"] == "fp32" and ours["source"]["judged_format"] == "fp16",
          f"the record says it ran as fp32 and was judged against fp16: {ours['source']}")
    html = os.path.join(work, "probe-report.html")
    done = subprocess.run([args.plab, "report", probe_file, "--html", html], capture_output=True, text=True)
    page = open(html).read() if done.returncode == 0 else ""
    check("PyTorch, fp32; the telemetry says what fp16 rounding would do to its tensors" in page,
          "the report's recipe row says what ran and what the telemetry judged")
    check("fp16 rounding would flush" in page or "would underflow in fp16" in page,
          "the report's summary says what fp16 would do, not what the run lost")
    check("AMP FP16" not in page, "the report never calls the fp32 run AMP FP16")

    # Every key the lab's own record has, at the top and in the summary (the app's replay
    # reads them), the probe's record has too.
    check(set(lab) - {"source"} <= set(ours), f"the record's keys: missing {sorted(set(lab) - set(ours))}")
    # Except the run totals over every step (run_rounding): the probe counts at its
    # telemetry steps only, so it writes none, and readers say so rather than read a count.
    totals = {"run_rounding", "run_rounding_through_step"}
    check(set(lab["summary"]) - totals <= set(ours["summary"]),
          f"the summary's keys: missing {sorted(set(lab['summary']) - totals - set(ours['summary']))}")
    check("run_rounding" not in ours["summary"], "the probe claims no run totals over steps it did not count")
    steps = {1, 5, 10, 15, 20}
    check({t["step"] for t in ours["telemetry"]} == steps, "the probe's telemetry steps are 1, 5, 10, 15, 20")
    lab_record = json.load(open(lab_fp16))
    largest = 0.0
    for kind, layers in (("weight_grad", {"conv1", "conv2", "fc1"}), ("activation_grad", {"conv2", "fc1"})):
        probe_u = flushed_shares(ours, steps, kind)
        lab_u = {k: v for k, v in flushed_shares(lab_record, steps, kind).items() if k in layers}
        print(f"      {kind} flushed in fp16, probe (PyTorch fp32) / lab (amp-fp16): " +
              ", ".join(f"{k} {100 * probe_u.get(k, float('nan')):.2f}% / {100 * v:.2f}%" for k, v in sorted(lab_u.items())))
        check(set(lab_u) == layers and layers <= set(probe_u), f"both record the {kind} of {', '.join(sorted(layers))}")
        check(all(abs(probe_u[k] - lab_u[k]) <= 0.005 for k in lab_u if k in probe_u),
              f"each layer's flushed share of its {kind} within 0.5 point of the lab's")
        check(all(probe_u.get(k, 0) > 0 for k, v in lab_u.items() if v >= 0.001),
              f"where the lab flushes 0.1% or more of a layer's {kind}, the probe sees flushes too")
        largest = max([largest] + list(lab_u.values()))
    # Batches of 512 make the mean's gradients small enough that fp16 flushes some (0.1-0.4%).
    check(largest >= 0.001, f"at least one layer flushes 0.1% or more ({100 * largest:.2f}%): the comparison is not of zeros")
    lost = [e for t in ours["telemetry"] for e in t["layers"] if e["kind"] == "weight_grad"]
    check(all(e["nonzero_updates"] > 0 for e in lost), "the probe counts each layer's nonzero updates")

    # bf16 autocast on the CPU (the AMP PyTorch runs here): the probe in the loop, measuring
    # bf16, against the lab's amp-bf16 run of the same weights and batches: every loss within
    # 2^-7 relative (one bf16 step, the golden test's bound, docs/PYTORCH.md).
    if hasattr(torch, "autocast"):
        torch.manual_seed(22)
        model = pt.make_model("small-cnn")
        init16 = os.path.join(work, "init-bf16.safetensors")
        pt.save_safetensors(init16, model.state_dict())
        batches16 = os.path.join(work, "batches-bf16.txt")
        lab_bf16 = os.path.join(work, "lab-amp-bf16.json")
        check(plab_train(args.plab, ["--model", "small-cnn", "--init-weights", init16, "--data-dir", data_dir(),
                                     "--optimizer", "sgd", "--momentum", "0", "--lr", "0.01", "--batch", "32",
                                     "--max-steps", "10", "--histogram-every", "5", "--recipe", "amp-bf16",
                                     "--write-batches", batches16, "--out", lab_bf16]) == 0,
              "plab train --recipe amp-bf16 exits 0")
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        bf16_file = os.path.join(work, "probe-bf16.plab.json")
        probe = Probe(model, bf16_file, fmt="bf16", every=5, optimizer=opt, name="PyTorch bf16 autocast")
        try:
            for idx in pt.read_batches(batches16):
                x, y = pt.batch_tensors(images, labels, idx)
                probe.begin_step()
                opt.zero_grad()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    logits = model(x)
                loss = F.cross_entropy(logits.float(), y)
                loss.backward()
                opt.step()
                probe.end_step(loss, batch=len(idx))
            probe.close()
            ours16 = json.load(open(bf16_file))
            lab16 = json.load(open(lab_bf16))
            diffs = [abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(ours16["steps"], lab16["steps"])]
            print(f"      bf16 autocast: largest relative loss difference {max(diffs):.2e}")
            check(len(ours16["steps"]) == 10 and max(diffs) <= 2.0 ** -7,
                  "bf16 autocast with the probe: every loss within 2^-7 relative of the lab's amp-bf16 run")
            check(ours16["settings"]["recipe"] == "amp-bf16" and ours16["source"]["as_run"] == "autocast bf16",
                  f"a bf16 autocast run is recorded as AMP BF16, as it ran: {ours16['settings']} {ours16['source']}")
            kinds = {e["kind"] for t in ours16["telemetry"] for e in t["layers"]}
            check(kinds == {"activation", "activation_grad", "weight_grad"}, f"bf16 autocast telemetry kinds: {sorted(kinds)}")
        except RuntimeError as e:   # PyTorch 1.13's bf16 convolution needs AVX-512 (golden_pytorch says the same)
            print(f"NOT RUN: bf16 autocast on this CPU ({str(e).splitlines()[0]})")

    # A model that changes a module's output in place (nn.ReLU(inplace=True), as ResNets do):
    # the probe still records every module's input gradient.
    tiny = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 2))
    tiny_file = os.path.join(work, "inplace.plab.json")
    probe = Probe(tiny, tiny_file, every=1)
    probe.begin_step()
    tiny(torch.randn(4, 8)).sum().backward()
    probe.end_step(0.0)
    probe.close()
    kinds = sorted((e["layer"], e["kind"]) for e in json.load(open(tiny_file))["telemetry"][0]["layers"])
    check(("2 (Linear)", "activation_grad") in kinds and ("0 (Linear)", "weight_grad") in kinds,
          f"an in-place ReLU after a module does not stop the probe: {kinds}")
    # Issue 68 item 3: an nn.Sequential's layers are named by path and type, not "0" and "2".
    check({layer for layer, _ in kinds} == {"0 (Linear)", "2 (Linear)"}, f"layers named with their type: {kinds}")

    # FP8 without a scale, fp16 and bf16: the probe's counts against plab convert's rounding
    # (the lab's own, bit-exact to the OFP8 and IEEE specifications), chunk by chunk over
    # values around every boundary: each format's smallest subnormal, its halves and ties,
    # the smallest normal, the largest finite value and past it (bf16's range reaches float32
    # subnormals), and log-uniform values between; the log2 histogram against math.frexp.
    from precision_lab import rounding_stats
    gen = torch.Generator().manual_seed(5)
    histograms_agree = True
    for fmt, (low, high) in (("e4m3", (-12, 10)), ("e5m2", (-19, 17)), ("fp16", (-26, 17)), ("bf16", (-135, 127))):
        edges = []
        for k in range(low, high):
            for m in (1.0, 1.0625, 1.125, 1.1875, 1.25, 1.5, 1.75, 1.875, 1.9375):
                edges.append(m * 2.0 ** k)
        values = torch.tensor(edges, dtype=torch.float32)
        values = torch.cat([values, torch.exp2(torch.empty(400).uniform_(low, high, generator=gen))])
        values = values * torch.where(torch.rand(values.numel(), generator=gen) < 0.5, -1.0, 1.0)
        p = subprocess.run([args.plab, "convert", "--format", fmt], input="\n".join(f"{v:.9g}" for v in values.tolist()),
                           capture_output=True, text=True)
        classes = [line.split("\t")[2] for line in p.stdout.splitlines()]
        check(p.returncode == 0 and len(classes) == values.numel(), f"plab convert --format {fmt} classifies every value")
        agree = True
        for start in range(0, values.numel(), 50):
            chunk = values[start:start + 50]
            # The printed decimal is what plab read: parse it back so both see the same float.
            chunk = torch.tensor([float(f"{v:.9g}") for v in chunk.tolist()], dtype=torch.float32)
            cls = classes[start:start + 50]
            stats, histogram = rounding_stats(chunk, fmt)
            expected = {"underflow": sum(c == "zero" for c in cls), "subnormal": sum(c == "subnormal" for c in cls),
                        "overflow": sum(c in ("inf", "nan") for c in cls)}
            if any(stats[k] != v for k, v in expected.items()):
                agree = False
                print(f"      {fmt} values {start}..{start + len(cls) - 1}: probe {stats}, plab convert {expected}")
            exponents = [math.frexp(v)[1] - 1 for v in chunk.tolist() if v != 0]
            first = min(exponents)
            want = {"first_exponent": first, "counts": [exponents.count(e) for e in range(first, max(exponents) + 1)],
                    "zeros": 0, "non_finite": 0}
            if histogram != want:
                histograms_agree = False
                print(f"      {fmt} values {start}..: probe histogram {histogram}, math.frexp {want}")
        check(agree, f"{fmt}: the probe's underflow, subnormal and overflow counts equal plab convert's, chunk by chunk")
    check(histograms_agree, "the probe's log2 histograms equal math.frexp's bins, chunk by chunk")
    specials = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 2.0 ** -140, -(2.0 ** -149), 1.0])
    stats, histogram = rounding_stats(specials, "fp16")
    check((stats["zeros_in"], stats["nan"], stats["inf_in"], stats["underflow"], stats["overflow"]) == (2, 1, 2, 2, 0)
          and histogram == {"first_exponent": -149, "counts": [1] + [0] * 8 + [1] + [0] * 139 + [1], "zeros": 2,
                            "non_finite": 3},
          f"zeros, NaN, infinities and float32 subnormals: {stats}, {histogram}")

    # The lab's readers take the probe's record.
    p = subprocess.run([args.plab, "report", probe_file, lab_fp32, "--json", os.path.join(work, "report")],
                       capture_output=True, text=True)
    check(p.returncode == 0, "plab report reads the probe's record" + ("" if p.returncode == 0 else ": " + p.stderr))
    p = subprocess.run([args.plab, "export", "--tensorboard", os.path.join(work, "tb"), probe_file],
                       capture_output=True, text=True)
    check(p.returncode == 0, "plab export --tensorboard reads the probe's record" + ("" if p.returncode == 0 else ": " + p.stderr))
    check_record_files(args.plab, work)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
