"""A probe for your own PyTorch training: it writes the run record Precision Lab writes
(docs/RUN_RECORD.md), so `plab report`, `plab export --tensorboard` and the app read your run
beside the lab's own.

    from precision_lab import Probe
    probe = Probe(model, "my-run.plab.json", fmt="fp16", every=50, optimizer=opt, scaler=scaler)
    for x, y in loader:
        probe.begin_step()
        opt.zero_grad()
        with torch.autocast("cuda", torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        probe.end_step(loss, batch=len(x))
    probe.evaluate(test_accuracy, test_loss)   # any time; optional
    probe.close()

What it records, every step: the loss, the loss scale the step used and whether GradScaler
skipped it (its scale fell). Every `every` steps (and at step 1), per module that holds
parameters (nn.Linear, nn.Conv2d, ...), against the format `fmt` (fp16, bf16, or FP8's
e4m3 or e5m2 without a scale):
how its output (`activation`), the gradient of its input (`activation_grad`) and its
parameters' gradients as the backward made them (scaled: `weight_grad`) would round into
that format: values that underflow to 0, become subnormal, overflow to inf, and a log2|x|
histogram; and the lost updates of the step (elements whose update was nonzero and whose
weight did not change; "nonzero" read from the optimizer's state: SGD's momentum buffer, or
the gradient without one; Adam's first moment). On a GPU, the device's peak memory.

Cheap between telemetry steps: the hooks return at once, and only the loss is read. The
record is rewritten atomically (a temporary file, then a rename) at most once a second and
at close(), with the lab's writer lock beside it until close(): a record written into the
app's runs folder is followed live as it grows. Pure Python on torch; no other package.
"""

import datetime
import json
import math
import os
import platform
import socket
import tempfile
import time

import torch

_FORMATS = {
    # name: (dtype, smallest normal)
    "fp16": (torch.float16, 2.0 ** -14),
    "bf16": (torch.bfloat16, 2.0 ** -126),
}


# FP8 (OCP OFP8): mantissa bits, smallest normal exponent, largest exponent, largest finite.
_FP8 = {
    "e4m3": (3, -6, 8, 448.0),
    "e5m2": (2, -14, 15, 57344.0),
}


def _round_fp8(a, fmt):
    """|x| (float64, finite) rounded to nearest even in an FP8 format, before any overflow:
    the quantum is 2^(clamp(floor(log2 a), emin, emax) - mantissa bits), as the lab's
    quantiser (engine/numerics/quantize.cpp)."""
    mbits, emin, emax, _ = _FP8[fmt]
    e = torch.frexp(a)[1].to(torch.float64) - 1           # floor(log2 a) for a > 0
    q = torch.exp2(torch.clamp(e, emin, emax) - mbits)
    return torch.round(a / q) * q                          # torch.round: half to even


def _count(mask):
    return int(torch.count_nonzero(mask))


def _exponent_histogram(a, zeros):
    """{e: how many of the nonzero finite values of `a` (|x|, float32, contiguous) lie in
    [2^e, 2^(e+1))}: one pass over the float32 exponent fields, frexp only for float32
    subnormals (field 0, beside the zeros)."""
    fields = torch.bincount(torch.bitwise_and(a.view(torch.int32) >> 23, 0xFF), minlength=256).tolist()
    counts = {biased - 127: n for biased, n in enumerate(fields) if n and 0 < biased < 255}
    if fields[0] > zeros:
        tiny = a[(a != 0) & (a < 2.0 ** -126)]
        for e, n in zip(*torch.unique(torch.frexp(tiny)[1].to(torch.int64) - 1, return_counts=True)):
            counts[int(e)] = int(n)
    return counts


def rounding_stats(x, fmt):
    """The lab's RoundingStats and log2 histogram of rounding fp32 values `x` into `fmt`
    (fp16, bf16, or FP8's e4m3 and e5m2, unscaled: a value past the largest finite one is
    counted as overflow, as the lab counts FP8's saturated values)."""
    x = x.detach().float().reshape(-1)
    a = x.abs()
    nan = _count(torch.isnan(a))
    inf_in = _count(a == math.inf)
    zeros_in = _count(a == 0)
    if fmt in _FP8:
        nonzero = torch.isfinite(a) & (a != 0)
        r = torch.where(nonzero, _round_fp8(torch.where(nonzero, a.double(), 1.0), fmt), 0.0)
        saturated = _count(r > _FP8[fmt][3])
        underflow = _count(nonzero & (r == 0))
        subnormal = _count((r != 0) & (r < 2.0 ** _FP8[fmt][1]))
    else:
        # Rounding to nearest is symmetric: |x| rounded is |x rounded|. NaN stays NaN and
        # compares false; an infinite input stays infinite.
        dtype, min_normal = _FORMATS[fmt]
        y = a.to(dtype)
        zeros_out = _count(y == 0)
        underflow = zeros_out - zeros_in
        subnormal = _count(y < min_normal) - zeros_out
        saturated = _count(y == math.inf) - inf_in
    stats = {
        "count": int(x.numel()),
        "zeros_in": zeros_in,
        "underflow": underflow,
        "subnormal": subnormal,
        "overflow": saturated,
        "nan": nan,
        "inf_in": inf_in,
    }
    histogram = {"first_exponent": 0, "counts": [], "zeros": zeros_in, "non_finite": nan + inf_in}
    exponents = _exponent_histogram(a, zeros_in)
    if exponents:
        first, last = min(exponents), max(exponents)
        histogram["first_exponent"] = first
        histogram["counts"] = [exponents.get(e, 0) for e in range(first, last + 1)]
    return stats, histogram


def _take_lock(record):
    """The lab's writer lock (engine/files/record_lock.h): ".<name>.lock" beside the record,
    created exclusively, holding "pid host". While it exists and its process runs, the app
    follows the record as it grows instead of calling it interrupted. A lock left by a
    process of this host that is gone is taken over; a live one is an error."""
    folder, name = os.path.split(os.path.abspath(record))
    lock = os.path.join(folder, "." + name + ".lock")
    for attempt in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid, host = open(lock).read().split()[:2]
                gone = host == socket.gethostname() and not _process_runs(int(pid))
            except (OSError, ValueError):
                gone = False
            if attempt == 0 and gone:
                os.unlink(lock)
                continue
            raise RuntimeError(f"{record} is being written by another process (its lock {lock} exists)")
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()} {socket.gethostname()}\n")
        return lock
    return None


def _process_runs(pid):
    try:
        os.kill(pid, 0)
        return True
    except PermissionError:
        return True
    except OSError:
        return False


class Probe:
    """Records a PyTorch training run as a Precision Lab run record (see the module's text)."""

    def __init__(self, model, path, *, fmt="fp16", every=50, optimizer=None, scaler=None, name="",
                 settings=None):
        if fmt not in _FORMATS and fmt not in _FP8:
            raise ValueError(f"fmt must be one of {sorted(_FORMATS) + sorted(_FP8)}, not {fmt!r}")
        if every < 1:
            raise ValueError("every must be at least 1")
        self.path = os.fspath(path)
        self.fmt = fmt
        self.every = every
        self.optimizer = optimizer
        self.scaler = scaler
        self.step = 0
        self._capture = False
        self._layers = []         # telemetry entries of the step being captured
        self._before = {}         # parameter -> weights before the step (telemetry steps)
        self._scale = 1.0
        self._started = time.monotonic()
        self._step_started = None
        self._last_flush = 0.0
        self._named = [(n, m) for n, m in model.named_modules()
                       if n and any(True for _ in m.parameters(recurse=False))]
        self._hooks = []
        for name_, module in self._named:
            self._hooks.append(module.register_forward_hook(self._forward_hook(name_)))
        device = next(model.parameters()).device if any(True for _ in model.parameters()) else torch.device("cpu")
        self._cuda = device.type == "cuda"
        recipe = {"preset": "custom", "custom": True, "display_name": f"PyTorch ({fmt} telemetry)",
                  "compute": "fp32", "storage": fmt, "master_weights": True,
                  "fp32_accumulate": True, "fp32_sensitive_ops": True,
                  "loss_scaling": {"mode": "dynamic" if scaler is not None else "off"}}
        self.record = {
            "format_version": 1,
            "name": name,
            "created_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": {"kind": "pytorch-probe", "model": type(model).__name__, "torch": torch.__version__},
            "recipe": recipe,
            # Settings the lab reads (its keys, docs/RUN_RECORD.md): AMP in the probe's format,
            # so the app judges the histograms in the format the telemetry measured; what the
            # probe cannot know keeps the lab's default. settings={...} says more (model, lr).
            # (FP8: the lab's unscaled FP8 recipe, E4M3 throughout for e4m3.)
            "settings": {**({"recipe": "amp-" + fmt} if fmt in _FORMATS else
                            {"recipe": "fp8-unscaled", **({"fp8_format": "e4m3"} if fmt == "e4m3" else {})}),
                         "loss_scale": "dynamic" if scaler is not None else "off", **(settings or {})},
            "seed": 0,
            "machine": {"cpu": platform.processor() or platform.machine(), "logical_cores": os.cpu_count() or 1,
                        "threads": torch.get_num_threads(), "os": f"{platform.system()} {platform.release()}",
                        "hostname": socket.gethostname()},
            "versions": {"precision_lab": "probe", "torch": torch.__version__},
            "backend": {"name": "pytorch-" + device.type},
            "data": {"name": "", "description": "the user's own data", "train_images": 0, "test_images": 0},
            "steps": [], "evals": [], "telemetry": [],
            "events": [{"step": 0, "type": "status", "status": "running",
                        "message": f"training {type(model).__name__} in PyTorch, recorded by the probe"}],
            "memory": {"categories": ["weights", "master_weights", "gradients", "activations", "optimizer_state",
                                      "workspace"], "samples": [], "peak": {}},
            "summary": {"status": "running", "message": "", "steps": 0, "skipped_steps": 0, "test_accuracy": None,
                        "best_test_accuracy": None, "images_per_second": 0.0, "underflow_fraction": {},
                        "overflow_fraction": {}, "activation_grad_underflow_fraction": {}, "lost_update_fraction": {},
                        "weights_made_non_finite": {},
                        # The probe does not see inside the optimizer's arithmetic: no state counts.
                        # It counts at its telemetry steps only: no run totals over every step
                        # ("run_rounding" and "run_rounding_through_step", which the lab's
                        # writer adds; readers then say so).
                        "optimizer_state_flushed": {}, "optimizer_state_made_non_finite": {}},
        }
        self._skipped = 0
        self._totals = {}          # (layer, kind) -> [underflow, overflow, nonzero finite]
        self._lost = {}            # layer -> [lost, nonzero, made non-finite]
        self._lock = _take_lock(self.path)
        self._flush(force=True)

    # -- hooks -------------------------------------------------------------------------
    def _forward_hook(self, layer):
        def hook(module, inputs, output):
            if not self._capture:
                return
            if torch.is_tensor(output):
                self._add(layer, "activation", output)
            # The gradient of the module's input, from a hook on that tensor (not a full
            # backward hook: those refuse a module whose output is then changed in place,
            # as nn.ReLU(inplace=True) does).
            if inputs and torch.is_tensor(inputs[0]) and inputs[0].requires_grad:
                inputs[0].register_hook(lambda grad: self._add(layer, "activation_grad", grad))
        return hook

    def _add(self, layer, kind, tensor, extra=None):
        stats, histogram = rounding_stats(tensor, self.fmt)
        entry = {"layer": layer, "kind": kind, "stats": stats, "histogram": histogram}
        entry.update(extra or {})
        self._layers.append(entry)
        total = self._totals.setdefault((layer, kind), [0, 0, 0])
        total[0] += stats["underflow"]
        total[1] += stats["overflow"]
        total[2] += stats["count"] - stats["zeros_in"] - stats["nan"] - stats["inf_in"]

    # -- the loop ------------------------------------------------------------------------
    def begin_step(self):
        """Call at the start of each step, before the forward pass."""
        self.step += 1
        self._step_started = time.monotonic()
        self._scale = float(self.scaler.get_scale()) if self.scaler is not None else 1.0
        self._capture = self.step == 1 or self.step % self.every == 0
        self._layers = []
        self._before = {}
        if self._capture:
            for _, module in self._named:
                for p in module.parameters(recurse=False):
                    self._before[p] = p.detach().clone()

    def end_step(self, loss, batch=0, lr=None):
        """Call after the optimizer's step (and scaler.update()) with the step's loss."""
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
        skipped = False
        if self.scaler is not None:
            skipped = float(self.scaler.get_scale()) < self._scale   # GradScaler backs off only on inf/NaN
        self._skipped += int(skipped)
        if lr is None and self.optimizer is not None and self.optimizer.param_groups:
            lr = self.optimizer.param_groups[0].get("lr", 0.0)
        elapsed = (time.monotonic() - self._step_started) * 1000 if self._step_started else 0.0
        self.record["steps"].append({"step": self.step, "epoch": 0, "loss": value if math.isfinite(value) else None,
                                     "loss_scale": self._scale, "skipped": skipped, "lr": float(lr or 0.0),
                                     "batch": int(batch) if batch else 1, "time_ms": elapsed})
        if self._capture:
            self._capture = False
            for layer, module in self._named:
                params = list(module.parameters(recurse=False))
                grads = [p.grad.detach().reshape(-1).float() * self._scale for p in params if p.grad is not None]
                lost, nonzero, made_non_finite = self._updates(params, skipped)
                extra = {"lost_updates": lost, "nonzero_updates": nonzero, "non_finite_updates": made_non_finite}
                if grads:
                    self._add(layer, "weight_grad", torch.cat(grads), extra)
                counts = self._lost.setdefault(layer, [0, 0, 0])
                counts[0] += lost
                counts[1] += nonzero
                counts[2] += made_non_finite
            self.record["telemetry"].append({"step": self.step, "loss_scale": self._scale, "layers": self._layers})
            self._layers = []
            self._before = {}
        if self._cuda:
            peak = int(torch.cuda.max_memory_allocated())
            self.record["memory"]["peak"] = {"total": peak}
        self.record["summary"]["steps"] = self.step
        self.record["summary"]["skipped_steps"] = self._skipped
        self._flush()

    def _updates(self, params, skipped):
        lost = nonzero = made_non_finite = 0
        if skipped:
            return 0, 0, 0
        for p in params:
            before = self._before.get(p)
            if before is None:
                continue
            state = self.optimizer.state.get(p, {}) if self.optimizer is not None else {}
            if "exp_avg" in state:
                moving = state["exp_avg"] != 0
            elif state.get("momentum_buffer") is not None:
                moving = state["momentum_buffer"] != 0
            elif p.grad is not None:
                moving = p.grad != 0
            else:
                continue
            after = p.detach()
            same = after == before
            nonzero += int(moving.sum())
            lost += int((moving & same).sum())
            made_non_finite += int((torch.isfinite(before) & ~torch.isfinite(after)).sum())
        return lost, nonzero, made_non_finite

    def evaluate(self, test_accuracy, test_loss=float("nan")):
        """Records an evaluation at the current step (accuracy as a fraction 0-1)."""
        self.record["evals"].append({"step": self.step, "epoch": 0, "test_accuracy": float(test_accuracy),
                                     "test_loss": float(test_loss)})
        self.record["summary"]["test_accuracy"] = float(test_accuracy)
        best = self.record["summary"].get("best_test_accuracy")
        self.record["summary"]["best_test_accuracy"] = max(float(test_accuracy), best if best is not None else 0.0)
        self._flush()

    def close(self, status="completed", message=""):
        """Ends the record (status: completed, stopped, diverged or failed) and removes the hooks."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        summary = self.record["summary"]
        summary["status"] = status
        summary["message"] = message or f"recorded by the Precision Lab probe ({self.step} steps)"
        self.record["events"].append({"step": self.step, "type": "status", "status": status,
                                      "message": summary["message"]})
        summary["finished_at"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        seconds = time.monotonic() - self._started
        images = sum(s["batch"] for s in self.record["steps"])
        summary["images_per_second"] = images / seconds if seconds > 0 else 0.0
        share = lambda part, whole: part / whole if whole else None   # nothing to count: null
        for key, kind, index in (("underflow_fraction", "weight_grad", 0), ("overflow_fraction", "weight_grad", 1),
                                 ("activation_grad_underflow_fraction", "activation_grad", 0)):
            summary[key] = {layer: share(t[index], t[2]) for (layer, k), t in self._totals.items() if k == kind}
        summary["lost_update_fraction"] = {layer: share(c[0], c[1]) for layer, c in self._lost.items()}
        summary["weights_made_non_finite"] = {layer: c[2] for layer, c in self._lost.items()}
        self._flush(force=True)
        if self._lock:
            try:
                os.unlink(self._lock)   # after the record is complete, as the lab's writer does
            except FileNotFoundError:
                pass
            self._lock = None

    def _flush(self, force=False):
        now = time.monotonic()
        if not force and now - self._last_flush < 1.0:
            return
        self._last_flush = now
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".probe-", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.record, f)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
