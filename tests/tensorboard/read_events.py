#!/usr/bin/env python3
"""CTest tensorboard_export: plab's TensorBoard event files read back by a reader written
here from the formats' specifications, independent of plab's writer (it links neither
protobuf nor plab's CRC), and compared with the run records they came from.

- TFRecord framing (TensorFlow's tfrecord format): uint64 length, uint32 masked CRC-32C of
  the length's 8 bytes, the payload, uint32 masked CRC-32C of the payload; the mask is
  ((crc >> 15) | (crc << 17)) + 0xa282ead8. CRC-32C from python3-crcmod ("crc-32c").
- Protocol buffers' wire format (varints, 64-bit, length-delimited, 32-bit fields) decoded
  by hand with TensorBoard's field numbers: Event {1 wall_time double, 2 step int64,
  3 file_version string, 5 summary}, Summary {1 value}, Summary.Value {1 tag, 2
  simple_value float, 5 histo, 8 tensor, 9 metadata}, HistogramProto {1 min, 2 max, 3 num,
  4 sum, 5 sum_squares, 6 bucket_limit packed double, 7 bucket packed double}; a text
  (TensorBoard's text plugin): SummaryMetadata {1 plugin_data {1 plugin_name "text"}},
  TensorProto {1 dtype 7 (DT_STRING), 2 tensor_shape (a scalar: no dims), 8 string_val}.

The expected values are computed here from the record's JSON (docs/RUN_RECORD.md), not
from plab's digest. Usage: read_events.py --plab PLAB --work DIR
Exit 77 (a skip, never a pass) when crcmod or the data is missing.
"""
import argparse
import json
import math
import os
import pathlib
import shutil
import struct
import subprocess
import sys

try:
    import crcmod.predefined
except ImportError:
    print("SKIP: python3-crcmod is missing (scripts/setup.sh --tests installs it)")
    sys.exit(77)

CRC32C = crcmod.predefined.mkCrcFun("crc-32c")


def masked(data):
    crc = CRC32C(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    """The payloads of a TFRecord file, every CRC checked."""
    pos = 0
    while pos < len(blob):
        if len(blob) - pos < 12:
            raise ValueError(f"truncated record header at byte {pos}")
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if length_crc != masked(header):
            raise ValueError(f"length CRC mismatch at byte {pos}")
        payload = blob[pos + 12:pos + 12 + length]
        if len(payload) != length or len(blob) < pos + 16 + length:
            raise ValueError(f"truncated record at byte {pos}")
        (payload_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        if payload_crc != masked(payload):
            raise ValueError(f"payload CRC mismatch at byte {pos}")
        yield payload
        pos += 16 + length


def varint(buf, pos):
    result, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf):
    """(field number, wire type, value) of a message; value is bytes for wire types 1, 2, 5."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def decode_histogram(buf):
    # proto3 leaves out a field at its default (0.0), so every field starts there.
    h = {"min": 0.0, "max": 0.0, "num": 0.0, "sum": 0.0, "sum_squares": 0.0, "bucket_limit": [], "bucket": []}
    names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
    for number, wire, value in fields(buf):
        if number in names:
            h[names[number]] = struct.unpack("<d", value)[0]
        elif number in (6, 7):
            key = "bucket_limit" if number == 6 else "bucket"
            if wire == 2:   # packed
                h[key] += [x[0] for x in struct.iter_unpack("<d", value)]
            else:
                h[key].append(struct.unpack("<d", value)[0])
    return h


def decode_event(buf):
    event = {"wall_time": 0.0, "step": 0, "values": []}
    for number, wire, value in fields(buf):
        if number == 1:
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2:
            event["step"] = value
        elif number == 3:
            event["file_version"] = value.decode()
        elif number == 5:
            for n, _, v in fields(value):
                if n != 1:
                    continue
                entry = {}
                for vn, _, vv in fields(v):
                    if vn == 1:
                        entry["tag"] = vv.decode()
                    elif vn == 2:
                        entry["simple_value"] = struct.unpack("<f", vv)[0]
                    elif vn == 5:
                        entry["histo"] = decode_histogram(vv)
                    elif vn == 9:
                        for mn, _, mv in fields(vv):
                            if mn == 1:
                                for pn, _, pv in fields(mv):
                                    if pn == 1:
                                        entry["plugin"] = pv.decode()
                    elif vn == 8:
                        tensor = {"dtype": 0, "dims": [], "strings": []}
                        for tn, _, tv in fields(vv):
                            if tn == 1:
                                tensor["dtype"] = tv
                            elif tn == 2:
                                tensor["dims"] = [d for dn, _, d in fields(tv) if dn == 2]
                            elif tn == 8:
                                tensor["strings"].append(tv.decode())
                        entry["tensor"] = tensor
                event["values"].append(entry)
    return event


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def skip_cause(sites):
    """Why a step skipped, from its record's "non_finite" list: the first site that
    overflowed, its largest finite magnitude against its format's largest value; where none
    overflowed, the first that met inf or NaN."""
    site = next((s for s in sites if s["overflow"] > 0), sites[0])
    where = f'{site["layer"]} {site["kind"]}'
    fmt_max = site["format_max"]
    max_text = f"{fmt_max:.3g}" if fmt_max >= 1e7 else f"{fmt_max:.0f}"
    if site["overflow"] > 0:
        if "largest_finite" in site:
            text = f'{where} overflowed first: 2^{math.log2(site["largest_finite"]):.1f} > {max_text}'
        else:
            n = site["overflow"]
            text = f'{where} overflowed first: {n} value{"" if n == 1 else "s"} past {max_text}'
        return text + f' ({site["format"]}\'s largest)'
    met = []
    if site["inf_in"] > 0:
        met.append(f'{site["inf_in"]} inf')
    if site["nan"] > 0:
        met.append(f'{site["nan"]} NaN')
    return f'{where} met inf/NaN first ({", ".join(met)}): made by arithmetic before any rounding overflowed'


def expected_from_record(record):
    """{(step, tag): value} scalars, {(step, tag): (limits, counts)} histograms and
    {(step, tag): text} texts."""
    scalars, histos, texts = {}, {}, {}
    skipped = 0
    for s in record["steps"]:
        if s["loss"] is not None:
            scalars[(s["step"], "loss/train")] = s["loss"]
        scalars[(s["step"], "loss_scale")] = s["loss_scale"]
        scalars[(s["step"], "lr")] = s["lr"]
        skipped += 1 if s["skipped"] else 0
        scalars[(s["step"], "skipped_steps")] = skipped
        if s["skipped"] and s.get("non_finite"):
            texts[(s["step"], "skip_cause")] = skip_cause(s["non_finite"])
    for e in record["evals"]:
        scalars[(e["step"], "accuracy/test")] = e["test_accuracy"]
        scalars[(e["step"], "loss/test")] = e["test_loss"]
    for t in record["telemetry"]:
        for entry in t["layers"]:
            where = f'{entry["layer"]}/{entry["kind"]}'
            st = entry["stats"]
            rounded = st["count"] - st["zeros_in"] - st["nan"] - st["inf_in"]
            if rounded > 0:   # percent, as the tags say; the record holds counts
                scalars[(t["step"], "underflow_pct/" + where)] = st["underflow"] / rounded * 100.0
                scalars[(t["step"], "overflow_pct/" + where)] = st["overflow"] / rounded * 100.0
            if entry["kind"] == "weight_grad" and entry.get("nonzero_updates", 0) > 0:
                scalars[(t["step"], "lost_updates_pct/" + entry["layer"])] = \
                    entry["lost_updates"] / entry["nonzero_updates"] * 100.0
            h = entry.get("histogram")
            if h and any(h["counts"]):
                counts = h["counts"]
                first = next(i for i, c in enumerate(counts) if c)
                last = max(i for i, c in enumerate(counts) if c)
                limits = [h["first_exponent"] + i + 1 for i in range(first, last + 1)]
                histos[(t["step"], "log2_abs/" + where)] = (h["first_exponent"] + first, limits,
                                                            [float(c) for c in counts[first:last + 1]])
    for v in record.get("scalars", []):   # values a PyTorch script logged (probe.log); null: left out
        if v["value"] is not None:
            scalars[(v["step"], "logged/" + v["name"])] = v["value"]
    mib = 1024.0 * 1024.0
    categories = record["memory"]["categories"]
    for m in record["memory"]["samples"]:
        for name, value in zip(categories, m["bytes"]):
            scalars[(m["step"], "memory_mib/" + name)] = value / mib
        scalars[(m["step"], "memory_mib/total")] = m["total"] / mib
    return scalars, histos, texts


def check_run(record_file, event_file, failures):
    record = json.loads(pathlib.Path(record_file).read_text())
    events = [decode_event(p) for p in records(pathlib.Path(event_file).read_bytes())]
    if events[0].get("file_version") != "brain.Event:2":
        failures.append(f"{event_file}: the first event is not the file version")
    got_scalars, got_histos, got_texts = {}, {}, {}
    last_step, last_wall = -1, 0.0
    for e in events[1:]:
        if e["step"] <= last_step or e["wall_time"] < last_wall:
            failures.append(f"{event_file}: events out of order at step {e['step']}")
        last_step, last_wall = e["step"], e["wall_time"]
        for v in e["values"]:
            key = (e["step"], v["tag"])
            if key in got_scalars or key in got_histos or key in got_texts:
                failures.append(f"{event_file}: {key} written twice")
            if "simple_value" in v:
                got_scalars[key] = v["simple_value"]
            elif "histo" in v:
                got_histos[key] = v["histo"]
            elif "tensor" in v:
                t = v["tensor"]
                if v.get("plugin") != "text" or t["dtype"] != 7 or t["dims"] or len(t["strings"]) != 1:
                    failures.append(f"{event_file}: {key} is not a text summary: {v}")
                else:
                    got_texts[key] = t["strings"][0]
    scalars, histos, texts = expected_from_record(record)
    if got_texts != texts:
        failures.append(f"{event_file}: texts {sorted(got_texts.items())[:3]} differ from the record's "
                        f"{sorted(texts.items())[:3]} ({len(got_texts)} against {len(texts)})")
    for key in sorted(set(scalars) | set(got_scalars)):
        if key not in got_scalars:
            failures.append(f"{event_file}: scalar {key} missing")
        elif key not in scalars:
            failures.append(f"{event_file}: scalar {key} is not in the record")
        elif got_scalars[key] != f32(scalars[key]) and not (math.isnan(got_scalars[key]) and math.isnan(scalars[key])):
            failures.append(f"{event_file}: scalar {key} is {got_scalars[key]!r}, the record says {scalars[key]!r}")
    for key in sorted(set(histos) | set(got_histos)):
        if key not in got_histos or key not in histos:
            failures.append(f"{event_file}: histogram {key} only on one side")
            continue
        low, limits, counts = histos[key]
        h = got_histos[key]
        if h["bucket_limit"] != limits or h["bucket"] != counts or h.get("min") != low or h.get("max") != limits[-1] \
                or h.get("num") != sum(counts):
            failures.append(f"{event_file}: histogram {key} differs from the record's bins")
    return len(got_scalars), len(got_histos), len(got_texts)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plab", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    work = pathlib.Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    # Two short runs that between them write every kind of value: an AMP FP16 run with
    # dynamic scaling from a scale that overflows (skipped steps, underflow, histograms)
    # and an FP32 run (lost updates without rounding stats).
    runs = {
        "amp": ["--recipe", "amp-fp16", "--loss-scale", "dynamic", "--init-scale", "16777216"],
        "fp32": ["--recipe", "fp32"],
    }
    for name, extra in runs.items():
        cmd = [args.plab, "train", "--model", "mlp", "--max-steps", "40", "--histogram-every", "10",
               "--eval-every", "20", "--threads", "1", "--quiet", "--name", name, "--out", str(work / f"{name}.json")] + extra
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            if "no data" in done.stderr.lower() or "data set" in done.stderr.lower():
                print("SKIP: no MNIST data:", done.stderr.strip())
                sys.exit(77)
            print(done.stderr)
            print("FAIL: plab train", name)
            sys.exit(1)
    # A record with values the training logged of its own, as the PyTorch probe's
    # probe.log(name, value) writes them (docs/RUN_RECORD.md "scalars"): the FP32 run's with
    # a list added, one value not finite (null), one name with a slash.
    logged = json.loads((work / "fp32.json").read_text())
    logged["name"] = "logged"
    logged["scalars"] = [{"step": s, "name": "grad_norm", "value": 1.0 / s} for s in range(1, 41)] + \
                        [{"step": 20, "name": "val/top5", "value": 0.75}, {"step": 40, "name": "val/top5", "value": None}]
    (work / "logged.json").write_text(json.dumps(logged))
    runs["logged"] = []
    out = work / "tb"
    done = subprocess.run([args.plab, "export", "--tensorboard", str(out)] + [str(work / f"{n}.json") for n in runs],
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr)
        print("FAIL: plab export")
        sys.exit(1)
    failures = []
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    if len(folders) != len(runs):
        failures.append(f"expected a folder per run, found {[p.name for p in folders]}")
    def run_folder(name):
        # DIR/<name>-<six hex digits of the run's id>
        found = [p for p in folders if p.name.startswith(name + "-") and len(p.name) == len(name) + 7]
        return found[0] if len(found) == 1 else out / name
    for name in runs:
        folder = run_folder(name)
        files = list(folder.glob("events.out.tfevents.*"))
        if len(files) != 1:
            failures.append(f"{folder}: expected one event file, found {len(files)}")
            continue
        n_scalars, n_histos, n_texts = check_run(work / f"{name}.json", files[0], failures)
        print(f"{name}: {n_scalars} scalars, {n_histos} histograms and {n_texts} texts read back and equal to the record's")
    # Kinds of value the two runs must have produced, so that the comparison above is not empty.
    amp_events = [decode_event(p) for p in records(next(run_folder("amp").glob("events.*")).read_bytes())]
    tags = {v["tag"].split("/")[0] for e in amp_events for v in e["values"]}
    for kind in ("loss", "accuracy", "loss_scale", "skipped_steps", "skip_cause", "underflow_pct", "overflow_pct",
                 "lost_updates_pct", "memory_mib", "log2_abs"):
        if kind not in tags:
            failures.append(f"the AMP run's events have no {kind}/* value")
    fp32_events = [decode_event(p) for p in records(next(run_folder("fp32").glob("events.*")).read_bytes())]
    if not any(v["tag"].startswith("lost_updates_pct/") for e in fp32_events for v in e["values"]):
        failures.append("the FP32 run's events have no lost_updates")
    logged_events = [decode_event(p) for p in records(next(run_folder("logged").glob("events.*")).read_bytes())]
    logged_tags = sorted({v["tag"] for e in logged_events for v in e["values"] if v["tag"].startswith("logged/")})
    if logged_tags != ["logged/grad_norm", "logged/val/top5"]:
        failures.append(f"the logged values' tags are {logged_tags}")
    # A damaged file is told apart: one flipped payload byte fails its CRC.
    blob = bytearray(next(run_folder("fp32").glob("events.*")).read_bytes())
    blob[20] ^= 0x01
    try:
        list(records(bytes(blob)))
        failures.append("a flipped byte passed the CRC check: the reader checks nothing")
    except ValueError:
        pass
    # A record from someone else cannot name a folder outside DIR: its name becomes a
    # file-name-safe stem inside it.
    hostile = json.loads((work / "fp32.json").read_text())
    hostile["name"] = "../../escaped"
    (work / "hostile.json").write_text(json.dumps(hostile))
    out2 = work / "tb-hostile"
    done = subprocess.run([args.plab, "export", "--tensorboard", str(out2), str(work / "hostile.json")],
                          capture_output=True, text=True)
    written = [p for p in work.rglob("events.out.tfevents.*") if out2 not in p.parents and out not in p.parents]
    written += list(out2.parent.parent.glob("escaped*"))   # where "../../escaped" would land
    if done.returncode != 0 or written or not list(out2.glob("*/events.out.tfevents.*")):
        failures.append(f"a record named ../../escaped wrote outside its folder or not at all: {written} {done.stderr}")
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("PASS: plab's event files read back with an independent reader to the records' values")


if __name__ == "__main__":
    main()
