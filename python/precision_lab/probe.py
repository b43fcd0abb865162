"""A probe for your own PyTorch training: it writes the run record Precision Lab writes
(docs/RUN_RECORD.md), so `plab report`, `plab export --tensorboard` and the app read your run
beside the lab's own.

    from precision_lab import Probe
    with Probe(model, "my-run.plab.json", fmt="fp16", every=50, optimizer=opt, scaler=scaler) as probe:
        for x, y in loader:
            probe.begin_step()
            opt.zero_grad()
            with torch.autocast("cuda", torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            probe.end_step(loss, batch=len(x))
            probe.log("grad_norm", norm)             # a value of your own; optional
        probe.evaluate(test_accuracy, test_loss)   # any time; optional
    # closed here: "completed", or "failed" naming the exception that escaped ("stopped" for
    # Ctrl-C); without `with`, call probe.close() at the end.

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
record is rewritten atomically (a temporary file beside it, mode 0644 less the umask, then a
rename) at most once a second and at close(), with the lab's writer lock beside it until
close(): a record written into the app's runs folder is followed live as it grows. A number
that is not finite (a NaN loss, accuracy or learning rate) is written as null, as the lab's
writer writes it: the file is always valid JSON. The record's path must be a regular file or
not exist yet (a FIFO, device, socket or folder is refused: the rename would replace it; a
link is replaced by the file, as the lab's writer does). A probe that is dropped without
close() (garbage, or the interpreter exiting) releases its lock, so the record reads as
interrupted and a new Probe of this process may write it. Pure Python on torch; no other
package.
"""

import datetime
import json
import math
import os
import platform
import secrets
import socket
import stat
import time
import weakref

import torch

_MAX_SCALAR_NAME = 200   # a logged value's name, in UTF-8 bytes (the lab's reader checks the same)

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


def _finite(x):
    """x as a float, or None (JSON's null) where it is not finite: JSON has no NaN or
    infinity, and the lab's writer writes them as null, which its reader reads as "none"."""
    x = float(x)
    return x if math.isfinite(x) else None


def _finite_all(value):
    """`value` (dicts, lists, numbers: what json writes) with every non-finite float None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_all(v) for v in value]
    return value


_SPECIAL_FILES = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_record_path(record):
    """The checks of the lab's outputs (engine/files/output_paths.cpp), before anything is
    written: the record's folder exists and is writable, and the record is a regular file or
    does not exist yet, links followed as the lab follows them. Unlike the lab, which writes
    a device in place (plab train --out /dev/stdout), the probe refuses one: it rewrites its
    record by renaming a new file over it, which would put a regular file in its place."""
    try:
        mode = os.stat(record).st_mode
    except FileNotFoundError:    # not there yet (or a link to nothing, replaced by the file)
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise ValueError(f"cannot write the record {record!r}: it is a folder, not a file")
    for test, kind in _SPECIAL_FILES:
        if mode is not None and test(mode):
            raise ValueError(f"cannot write the record {record!r}: it is {kind}, not a regular file, and the "
                             "probe would replace it (it rewrites its record by renaming a new file over it)")
    folder = os.path.dirname(os.path.abspath(record))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write the record {record!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write the record {record!r}: the folder {folder!r} is not writable")
    if mode is not None and not os.access(record, os.W_OK):
        raise PermissionError(f"cannot write the record {record!r}: the file exists and is not writable")


# The locks this process's open probes hold (absolute paths): a lock naming this process is
# an open Probe's, or else one a closed or collected Probe left, which a new Probe takes over.
_held_locks = set()


def _lock_holder(lock):
    """(pid, host) a lock names; None where it is not a regular file (never opened: a FIFO
    would block) or not yet written whole (engine/files/record_lock.cpp's readHolder)."""
    try:
        if not stat.S_ISREG(os.lstat(lock).st_mode):
            return None
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd) as f:
            pid, host = f.read().split()[:2]
        return int(pid), host
    except (OSError, ValueError):
        return None


def _holder_alive(lock, holder):
    """Whether the lock's writer may still be writing, as the lab decides (record_lock.cpp's
    alive): another host's is; one not yet readable is for a minute after it was written; a
    process of this host while it runs; this process while an open Probe holds the lock."""
    if holder is None:
        try:
            return time.time() - os.lstat(lock).st_mtime < 60
        except OSError:
            return False
    pid, host = holder
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return lock in _held_locks
    return pid > 0 and _process_runs(pid)


def _take_lock(record):
    """The lab's writer lock (engine/files/record_lock.h): ".<name>.lock" beside the record,
    created exclusively, holding "pid host". While it exists and its process runs, the app
    follows the record as it grows instead of calling it interrupted. A lock whose writer is
    gone (a process of this host that ended, a Probe of this process that was closed or
    collected) is taken over; a live one is an error."""
    folder, name = os.path.split(os.path.abspath(record))
    lock = os.path.join(folder, "." + name + ".lock")
    for attempt in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            holder = _lock_holder(lock)
            if attempt == 0 and not _holder_alive(lock, holder):
                try:
                    os.unlink(lock)
                except FileNotFoundError:
                    pass
                continue
            if holder is not None and holder == (os.getpid(), socket.gethostname()):
                raise RuntimeError(f"{record} is being written by another Probe of this process, still open: "
                                   "close() it first (`with Probe(...) as probe:` closes it at the block's end)")
            who = f"pid {holder[0]} on {holder[1]}" if holder is not None else "another process"
            raise RuntimeError(f"{record} is being written by {who} (its lock {lock} exists)")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(f"{os.getpid()} {socket.gethostname()}\n")
        except BaseException:
            os.unlink(lock)
            raise
        _held_locks.add(lock)
        return lock
    raise RuntimeError(f"{record}: its lock {lock} could not be taken")


def _release(lock, owner, hooks):
    """Removes a probe's hooks and its lock: at close(), or when the Probe is collected or the
    interpreter exits without close() (weakref.finalize), or when its __init__ fails. Only
    in the process that took the lock: a forked child (a DataLoader's worker) holds a copy of
    the Probe and must not remove its parent's lock."""
    for h in hooks:
        h.remove()
    hooks.clear()
    if os.getpid() != owner:
        return
    _held_locks.discard(lock)
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass


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
        _check_record_path(self.path)
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
        self._user_settings = dict(settings or {})
        self._autocast = None    # the autocast dtype seen in the forward pass ("fp16", "bf16"), "" for none
        # Each module with parameters by its path in the model and its type, "features.1
        # (Conv2d)": an nn.Sequential's children are named only "0", "1", ...
        self._named = [(f"{n} ({type(m).__name__})", m) for n, m in model.named_modules()
                       if n and any(True for _ in m.parameters(recurse=False))]
        self._hooks = []
        self._closed = False
        device = next(model.parameters()).device if any(True for _ in model.parameters()) else torch.device("cpu")
        self._cuda = device.type == "cuda"
        self.record = {
            "format_version": 1,
            "name": name,
            "created_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            # What ran apart from what was measured: the training as it ran (as_run, from the
            # autocast state the forward pass saw and whether a GradScaler was given; "fp32"
            # until a telemetry step has seen it) and the format the telemetry judged the
            # tensors against: what that rounding would do to them (judged_format).
            "source": {"kind": "pytorch-probe", "model": type(model).__name__, "torch": torch.__version__,
                       "as_run": self._as_run_text(""), "judged_format": fmt},
            # Settings the lab reads (its keys, docs/RUN_RECORD.md): AMP in the probe's format,
            # so the app judges the histograms in the format the telemetry measured; what the
            # probe cannot know keeps the lab's default. settings={...} says more (model, lr).
            # (FP8: the lab's unscaled FP8 recipe, E4M3 throughout for e4m3.)
            "settings": self._settings_as_run(""),
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
        # The hooks and the lock go with the Probe: at close(), or when it is collected unclosed
        # (the hooks hold it weakly) or the interpreter exits, or here if __init__ fails.
        self._finalizer = weakref.finalize(self, _release, self._lock, os.getpid(), self._hooks)
        try:
            for name_, module in self._named:
                self._hooks.append(module.register_forward_hook(self._forward_hook(name_)))
            self._flush(force=True)
        except BaseException:
            self._finalizer()
            raise

    def _as_run_text(self, autocast):
        text = f"autocast {autocast}" if autocast else "fp32"
        return text + (" with GradScaler" if self.scaler is not None else "")

    def _settings_as_run(self, autocast):
        """The lab's settings keys for the training as it ran: its recipe from the autocast
        state (fp32, or AMP in the autocast's format), loss scaling from the GradScaler; what
        the probe cannot know keeps the lab's default. settings={...} says more (model, lr)."""
        return {"recipe": "amp-" + autocast if autocast else "fp32",
                "loss_scale": "dynamic" if self.scaler is not None else "off",
                **_finite_all(self._user_settings)}

    def _see_autocast(self):
        """Called in a forward hook: the autocast state the module's forward ran under."""
        # Both devices' states: the model may have moved after the probe was made.
        dtype = None
        if torch.is_autocast_enabled():
            dtype = torch.get_autocast_gpu_dtype()
        elif hasattr(torch, "is_autocast_cpu_enabled") and torch.is_autocast_cpu_enabled():
            dtype = torch.get_autocast_cpu_dtype()
        seen = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dtype, "")
        if self._autocast is None or (seen and not self._autocast):
            self._autocast = seen
            self.record["source"]["as_run"] = self._as_run_text(seen)
            self.record["settings"] = self._settings_as_run(seen)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        """Closes the record: "completed", or "failed" naming the exception that escapes the
        block ("stopped" for KeyboardInterrupt: Ctrl-C is how a notebook stops a run)."""
        if not self._closed:
            if exc_type is None:
                self.close()
            elif issubclass(exc_type, KeyboardInterrupt):
                self.close("stopped", f"stopped by KeyboardInterrupt at step {self.step}")
            else:
                text = str(exc).strip()
                self.close("failed", f"{exc_type.__name__}{': ' + text if text else ''} (at step {self.step})")
        return False

    # -- hooks -------------------------------------------------------------------------
    def _forward_hook(self, layer):
        ref = weakref.ref(self)   # the model does not keep an abandoned probe (and its lock) alive

        def hook(module, inputs, output):
            probe = ref()
            if probe is None or not probe._capture:
                return
            probe._see_autocast()
            if torch.is_tensor(output):
                probe._add(layer, "activation", output)
            # The gradient of the module's input, from a hook on that tensor (not a full
            # backward hook: those refuse a module whose output is then changed in place,
            # as nn.ReLU(inplace=True) does).
            if inputs and torch.is_tensor(inputs[0]) and inputs[0].requires_grad:
                inputs[0].register_hook(lambda grad: probe._add(layer, "activation_grad", grad))
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
        self._check_open()
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
        self._check_open()
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
        skipped = False
        if self.scaler is not None:
            skipped = float(self.scaler.get_scale()) < self._scale   # GradScaler backs off only on inf/NaN
        self._skipped += int(skipped)
        if lr is None and self.optimizer is not None and self.optimizer.param_groups:
            lr = self.optimizer.param_groups[0].get("lr", 0.0)
        elapsed = (time.monotonic() - self._step_started) * 1000 if self._step_started else 0.0
        if batch and int(batch) < 1:
            raise ValueError(f"batch must be the number of samples in the step (at least 1), not {batch!r}")
        # A learning rate the lab cannot show (negative, NaN, infinite) is written as none: the
        # lab's records hold rates from 0 up (found by tests/fuzz/fuzz_probe.py).
        rate = _finite(lr) if lr is not None else 0.0
        if rate is not None and rate < 0:
            rate = None
        # GradScaler halves its scale on every skipped step without a floor: a diverged run
        # reaches 0, which the lab's records never hold (a scale is positive): none then.
        scale = _finite(self._scale)
        if scale is not None and scale <= 0:
            scale = None
        self.record["steps"].append({"step": self.step, "epoch": 0, "loss": _finite(value),
                                     "loss_scale": scale, "skipped": skipped,
                                     "lr": rate, "batch": int(batch) if batch else 1, "time_ms": elapsed})
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
            self.record["telemetry"].append({"step": self.step, "loss_scale": scale,
                                             "layers": self._layers})
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
        """Records an evaluation at the current step: the accuracy a fraction 0-1, the loss
        optional. Either written as null where it is not finite (not measured, or NaN)."""
        self._check_open()
        accuracy = _finite(test_accuracy)
        if accuracy is not None and not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"test_accuracy is a fraction from 0 to 1, not {accuracy!r}"
                             + (" (a percentage? divide it by 100)" if 1.0 < accuracy <= 100.0 else ""))
        self.record["evals"].append({"step": self.step, "epoch": 0, "test_accuracy": accuracy,
                                     "test_loss": _finite(test_loss)})
        summary = self.record["summary"]
        summary["test_accuracy"] = accuracy
        if accuracy is not None:
            best = summary.get("best_test_accuracy")
            summary["best_test_accuracy"] = max(accuracy, best) if best is not None else accuracy
        self._flush()

    def log(self, name, value):
        """Records a value of your own at the current step (after begin_step(), or 0 before
        the first): a gradient norm, a learning rate, a validation metric. The app draws it in
        its "Logged values" chart, the exports carry it (CSV's -scalars.csv, TensorBoard's
        logged/<name>). `name` is text of 1 to 200 characters (UTF-8 bytes); `value` a number
        or a one-element tensor, written as null where it is not finite."""
        self._check_open()
        if not isinstance(name, str) or not name or len(name.encode("utf-8", errors="replace")) > _MAX_SCALAR_NAME:
            raise ValueError(f"name must be text of 1 to {_MAX_SCALAR_NAME} characters, not {name!r}")
        if torch.is_tensor(value):
            if value.numel() != 1:
                raise ValueError(f"value must be one number, not a tensor of {value.numel()} elements")
            value = value.detach().item()
        if isinstance(value, (str, bytes)):
            raise ValueError(f"value must be a number, not the text {value!r}")
        try:
            value = float(value)   # ints, floats, numpy scalars
        except OverflowError:      # an int beyond any float
            value = math.inf
        except (TypeError, ValueError):
            raise ValueError(f"value must be a number, not {value!r}") from None
        self.record.setdefault("scalars", []).append({"step": self.step, "name": name, "value": _finite(value)})
        self._flush()

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"the probe of {self.path} is closed: its record is complete")

    def close(self, status="completed", message=""):
        """Ends the record (status: completed, stopped, diverged or failed), removes the hooks
        and releases the lock (also when the last write fails). A second close() does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._finish(status, message)
        finally:
            self._finalizer()

    def _finish(self, status, message):
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
        self._flush(force=True)   # the lock goes after this last write, as the lab's writer does

    def _flush(self, force=False):
        now = time.monotonic()
        if not force and now - self._last_flush < 1.0:
            return
        self._last_flush = now
        try:
            text = json.dumps(self.record, allow_nan=False, ensure_ascii=False)
        except ValueError:   # a non-finite number no site above made null (a user's value): null too
            text = json.dumps(_finite_all(self.record), allow_nan=False, ensure_ascii=False)
        # UTF-8, as the lab reads: text that is no Unicode (a lone surrogate in a name, which
        # ensure_ascii would have written as an escape the lab refuses) becomes "?".
        data = text.encode("utf-8", errors="replace")
        # A temporary beside the record, named as the lab's writer names its own
        # (engine/files/atomic_file.cpp), created exclusively with mode 0644, from which the
        # umask takes its bits as from any new file (mkstemp's 0600 would keep the record from
        # the app of another user, and from a reader in a container).
        folder, name = os.path.split(os.path.abspath(self.path))
        for _ in range(100):
            tmp = os.path.join(folder, f".{name}.{secrets.token_hex(3)}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"cannot write {self.path}: no free name for a temporary file in {folder}")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)   # never leave a partial temporary behind
            except FileNotFoundError:
                pass
            raise
