#!/usr/bin/env python3
"""CTest report_html_interactive: plab's HTML report loaded in headless Chromium (Debian's
chromium, no network), its interactive charts driven as a person would, and what they
hold compared with the run records they came from (docs/RUN_RECORD.md), not with plab's
own digest.

  data      the loss chart's lines are each run's loss smoothed as the app and TensorBoard
            smooth it (bias-corrected exponential moving average, weight 0.95), computed
            here from the record's steps; the accuracy chart's points are the record's
            evaluations; the loss-scale chart marks exactly the record's skipped steps; a
            histogram's bars are the record's bins as percent of the snapshot's values.
  hover     the pointer over a step shows, in the legend, each run's value at that step.
  zoom      a drag across the plot zooms the steps to the dragged range; a double click
            shows the whole range again.
  toggles   a click on a run's legend entry hides its line, a second shows it again.
  page      well-formed XHTML, one file: no src or href leaves it, and it loads with every
            host unreachable.

Usage: check_interactive.py --plab PLAB --work DIR. Exit 77 (a skip, never a pass) without
chromium (scripts/setup.sh --tests installs it) or without MNIST data.
"""
import argparse
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

failures = []


def check(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def smoothed(losses, weight=0.95):
    """report/smoothing.cpp's rule, written again from its description: NaN stays NaN."""
    out, average, norm = [], 0.0, 0.0
    for x in losses:
        if x is None or not math.isfinite(x):
            out.append(None)
            continue
        average = weight * average + (1.0 - weight) * x
        norm = weight * norm + (1.0 - weight)
        out.append(average / norm)
    return out


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(1e-12, abs(b))


# Run in the page after its charts are made: reads each chart's data, then hovers, drags,
# double-clicks and clicks legend entries with DOM mouse events, as a person would.
PROBE = r"""
<script>//<![CDATA[
window.addEventListener("load", function () {
  var out = { charts: [], error: null };
  function legendValues(u) {
    return Array.prototype.map.call(u.root.querySelectorAll(".u-legend .u-series"), function (row) {
      var v = row.querySelector(".u-value");
      return { label: row.querySelector(".u-label") ? row.querySelector(".u-label").textContent : "",
               value: v ? v.textContent : "", off: row.classList.contains("u-off") };
    });
  }
  // A mouse event at (x, y) of the plot's overlay (CSS pixels), sent to `target`.
  function mouse(u, target, type, x, y) {
    var r = u.over.getBoundingClientRect();
    target.dispatchEvent(new MouseEvent(type, { clientX: r.left + x, clientY: r.top + y, bubbles: true, button: 0, buttons: 1,
                                               movementX: 1, movementY: 0 }));
  }
  // uPlot applies a new scale in a microtask after the event: each step waits a moment.
  function later() { return new Promise(function (resolve) { setTimeout(resolve, 20); }); }
  async function drive() {
    for (const c of window.plabCharts || []) {
      var u = c.plot;
      var entry = { id: c.id, labels: u.series.map(function (s) { return s.label; }),
                    // Every index read (a hole is absent too, which map() would skip).
                    data: u.data.map(function (col) {
                      var out = [];
                      for (var k = 0; k < col.length; ++k) out.push(col[k] === undefined ? "absent" : col[k]);
                      return out;
                    }),
                    svgHidden: document.querySelector("#chart-" + c.id + " .static").style.display === "none" };
      var x = u.data[0];
      var top = u.bbox.height / devicePixelRatio / 2;
      // A drag across the middle half of the steps, then a double click.
      if (c.id === "loss" || c.id === "histogram-1") {
        var a = u.valToPos(x[Math.floor(x.length / 4)], "x"), b = u.valToPos(x[Math.floor(3 * x.length / 4)], "x");
        entry.zoomWanted = [u.posToVal(a, "x"), u.posToVal(b, "x")];
        entry.before = [u.scales.x.min, u.scales.x.max];
        mouse(u, u.over, "mousedown", a, top);
        mouse(u, u.over, "mousemove", (a + b) / 2, top);
        mouse(u, u.over, "mousemove", b, top);
        mouse(u, document, "mouseup", b, top);
        await later();
        entry.zoomed = [u.scales.x.min, u.scales.x.max];
        mouse(u, u.over, "dblclick", a, top);
        await later();
        entry.unzoomed = [u.scales.x.min, u.scales.x.max];
      }
      if (c.id === "loss") {
        var i = Math.floor(x.length / 2);
        mouse(u, u.over, "mousemove", u.valToPos(x[i], "x"), top);
        await later();
        entry.hover = { step: x[i], idx: u.cursor.idx, legend: legendValues(u) };
        var rows = u.root.querySelectorAll(".u-legend .u-series");
        rows[1].querySelector(".u-label").click();
        await later();
        entry.afterHide = { show: u.series[1].show, legend: legendValues(u) };
        rows[1].querySelector(".u-label").click();
        await later();
        entry.afterShow = { show: u.series[1].show };
      }
      out.charts.push(entry);
    }
  }
  drive().catch(function (e) { out.error = String(e && e.stack || e); }).then(function () {
    var pre = document.createElement("pre");
    pre.id = "plab-test";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
});
//]]></script>
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plab", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    browser = chromium()
    if not browser:
        print("SKIP: chromium is missing (scripts/setup.sh --tests installs it)")
        sys.exit(77)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # Two short runs: AMP FP16 from a loss scale that overflows (skipped steps, histograms)
    # and FP32.
    runs = {"amp": ["--recipe", "amp-fp16", "--loss-scale", "dynamic", "--init-scale", "16777216"],
            "fp32": ["--recipe", "fp32"]}
    for name, extra in runs.items():
        done = subprocess.run([args.plab, "train", "--model", "mlp", "--max-steps", "60", "--histogram-every", "10",
                               "--eval-every", "20", "--threads", "1", "--quiet", "--name", name,
                               "--out", os.path.join(work, name + ".json")] + extra, capture_output=True, text=True)
        if done.returncode != 0:
            if "data" in done.stderr.lower() and "mnist" in done.stderr.lower():
                print("SKIP: no MNIST data:", done.stderr.strip())
                sys.exit(77)
            print(done.stderr)
            sys.exit(1)
    records = {name: json.load(open(os.path.join(work, name + ".json"))) for name in runs}
    page = os.path.join(work, "report.html")
    done = subprocess.run([args.plab, "report", "--html", page] + [os.path.join(work, n + ".json") for n in runs],
                          capture_output=True, text=True)
    check(done.returncode == 0, "plab report --html" + ("" if done.returncode == 0 else ": " + done.stderr))
    text = open(page, encoding="utf-8").read()
    try:
        xml.dom.minidom.parseString(text.encode("utf-8"))
        check(True, "the page is well-formed XHTML")
    except Exception as e:   # noqa: BLE001
        check(False, f"the page is well-formed XHTML: {e}")
    outside = re.findall(r'\s(?:src|href)="(?!#)([^"]*)"', text)
    check(not outside, f"no src or href leaves the file: {outside[:3]}")

    probed = os.path.join(work, "probed.html")
    with open(probed, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", PROBE + "</body>"))
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                          "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=5000", "--dump-dom",
                          "file://" + probed], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="plab-test">(.*?)</pre>', dom.stdout, re.S)
    check(found is not None, "headless Chromium loaded the page and ran its scripts")
    if not found:
        print(dom.stderr[-2000:])
        sys.exit(1)
    result = json.loads(html.unescape(found.group(1)))
    check(result["error"] is None, f"the probe ran without a script error: {result['error']}")
    charts = {c["id"]: c for c in result["charts"]}
    check({"loss", "accuracy", "loss-scale"} <= set(charts) and any(k.startswith("histogram") for k in charts),
          f"the line charts are interactive: {sorted(charts)}")
    check(charts and all(c["svgHidden"] for c in charts.values()), "each interactive chart replaced its static SVG")

    labels = {"amp": None, "fp32": None}
    loss = charts.get("loss")
    if loss:
        x = loss["data"][0]
        for name, record in records.items():
            column = loss["labels"].index(name) if name in loss["labels"] else -1
            check(column > 0, f"the loss chart has a line named {name}: {loss['labels']}")
            if column <= 0:
                continue
            labels[name] = column
            want = dict(zip((s["step"] for s in record["steps"]), smoothed([s["loss"] for s in record["steps"]])))
            got = [(x[i], v) for i, v in enumerate(loss["data"][column]) if v != "absent"]
            check(len(got) >= 30 and all((v is None and want.get(step) is None) or close(v, want.get(step))
                                         for step, v in got),
                  f"{name}: the loss line's {len(got)} points are the record's smoothed losses at their steps")
        hover = loss.get("hover", {})
        step = hover.get("step")
        legend = {row["label"]: row["value"] for row in hover.get("legend", [])}
        for name, column in labels.items():
            if column is None:
                continue
            want = dict(zip((s["step"] for s in records[name]["steps"]), smoothed([s["loss"] for s in records[name]["steps"]])))
            shown = legend.get(name, "")
            check(shown not in ("", "–") and want.get(step) is not None and abs(float(shown) - want[step]) <= 1e-3 * abs(want[step]),
                  f"hovering step {step} shows {name}'s loss there in the legend: {shown!r} (record: {want.get(step)})")
        hidden = loss.get("afterHide", {})
        check(hidden.get("show") is False and hidden["legend"][1]["off"], "a click on a run's legend entry hides its line")
        check(loss.get("afterShow", {}).get("show") is True, "a second click shows it again")

    # Zoom, in the loss chart and in a histogram (whose whole view is wider than its data:
    # the format's regions around it).
    for chart in (charts.get("loss"), charts.get("histogram-1")):
        if not chart:
            continue
        x = chart["data"][0]
        wanted, zoomed, unzoomed, before = (chart.get(k) for k in ("zoomWanted", "zoomed", "unzoomed", "before"))
        span = before[1] - before[0] if before else 1.0
        # Within 1% of the range shown (about a pixel: uPlot rounds the drag to pixels).
        check(wanted and zoomed and all(abs(a - b) <= 0.01 * span for a, b in zip(zoomed, wanted))
              and zoomed[1] - zoomed[0] < 0.8 * span,
              f"{chart['id']}: a drag zooms to the dragged range: {zoomed} for {wanted}")
        check(unzoomed and before and all(abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(unzoomed, before)),
              f"{chart['id']}: a double click shows the whole view again: {unzoomed}, before the drag {before}")

    accuracy = charts.get("accuracy")
    if accuracy:
        x = accuracy["data"][0]
        for name, record in records.items():
            column = accuracy["labels"].index(name) if name in accuracy["labels"] else -1
            got = [(x[i], v) for i, v in enumerate(accuracy["data"][column]) if v != "absent"] if column > 0 else []
            want = [(e["step"], 100.0 * e["test_accuracy"]) for e in record["evals"]]
            check(len(got) == len(want) and all(a[0] == b[0] and close(a[1], b[1]) for a, b in zip(got, want)),
                  f"{name}: the accuracy points are the record's evaluations: {got} against {want}")

    scale = charts.get("loss-scale")
    if scale:
        skipped = [s["step"] for s in records["amp"]["steps"] if s["skipped"]]
        column = next((i for i, l in enumerate(scale["labels"]) if l.startswith("skipped step")), -1)
        got = [scale["data"][0][i] for i, v in enumerate(scale["data"][column]) if v != "absent"] if column > 0 else []
        check(skipped and got == skipped, f"the loss-scale chart marks the record's skipped steps: {got} against {skipped}")

    histogram = next((c for k, c in sorted(charts.items()) if k.startswith("histogram")), None)
    if histogram:
        # "step N" lines of one run's layer: the record's bins of that step, in percent.
        title_layer = None
        for column in range(1, len(histogram["labels"])):
            label = histogram["labels"][column]
            if not label.startswith("step "):
                continue
            step = int(label.split()[1])
            x = histogram["data"][0]
            got = {x[i]: v for i, v in enumerate(histogram["data"][column]) if v != "absent"}
            matches = []
            for record in records.values():
                for t in record["telemetry"]:
                    if t["step"] != step:
                        continue
                    for entry in t["layers"]:
                        h = entry.get("histogram")
                        if entry["kind"] != "weight_grad" or not h or not any(h["counts"]):
                            continue
                        counts = h["counts"]
                        first = next(i for i, c in enumerate(counts) if c)
                        last = max(i for i, c in enumerate(counts) if c)
                        total = sum(counts)
                        want = {h["first_exponent"] + i: 100.0 * counts[i] / total for i in range(first, last + 1)}
                        want[h["first_exponent"] + last + 1] = want[h["first_exponent"] + last]   # the last bin's right edge
                        if set(want) == set(got) and all(close(got[k], want[k]) for k in want):
                            matches.append(entry["layer"])
            check(bool(matches), f"the histogram's step {step} is a record's bins of that step in percent ({matches})")
            title_layer = title_layer or matches
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
