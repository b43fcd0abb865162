// The interactive charts of a Precision Lab HTML report, drawn with uPlot (vendored in
// third_party/uplot). Each line chart's data is a JSON block beside its static SVG (a
// script element of type application/json and class plab-chart-data, written by
// report_render/interactive_charts.cpp from the same ChartSpec the SVG and the PDF are
// painted from). Hover shows every run's value at the step in the legend, a drag zooms
// into the steps, a double click zooms out, a click on a legend entry hides or shows a run.
// Where this script cannot run (scripts off, an old browser) the static SVG stays.
// window.plabCharts lists the charts made: {id, plot (the uPlot), spec}.
(function () {
  "use strict";
  var made = [];
  window.plabCharts = made;
  if (typeof uPlot === "undefined") return;

  // Four significant digits; tiny and huge values in exponent form.
  function formatValue(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
    return String(parseFloat(v.toPrecision(4)));
  }

  // One x column for every series (uPlot's data is aligned): a series' own steps carry its
  // values, NaN (null in the JSON) a gap in its line, steps it has no sample at undefined,
  // which uPlot spans.
  function alignedData(spec) {
    var xs = {};
    spec.series.forEach(function (s) {
      s.x.forEach(function (v) { xs[v] = true; });
      if (s.steps && s.x.length) xs[s.x[s.x.length - 1] + 1] = true;   // the last bin's right edge
      if (s.markers) s.markers.x.forEach(function (v) { xs[v] = true; });
    });
    var x = Object.keys(xs).map(Number).sort(function (a, b) { return a - b; });
    var at = {};
    x.forEach(function (v, i) { at[v] = i; });
    var data = [x];
    var series = [{ label: spec.xLabel, value: function (u, v) { return formatValue(v); } }];
    spec.series.forEach(function (s) {
      var y = new Array(x.length).fill(undefined);
      s.x.forEach(function (v, i) { y[at[v]] = s.y[i]; });
      if (s.steps && s.x.length) y[at[s.x[s.x.length - 1] + 1]] = s.y[s.y.length - 1];
      data.push(y);
      series.push({
        label: s.name,
        stroke: s.color,
        width: 2,
        fill: s.steps ? s.color + "2d" : undefined,
        paths: s.steps ? uPlot.paths.stepped({ align: 1 }) : undefined,
        points: { show: !s.steps && s.x.length <= 12 && !(s.markers && s.markers.x.length), size: 7, fill: s.color },
        spanGaps: false,
        value: function (u, v) { return formatValue(v); }
      });
      if (s.markers && s.markers.x.length) {
        var m = new Array(x.length).fill(undefined);
        s.markers.x.forEach(function (v, i) { m[at[v]] = s.markers.y[i]; });
        data.push(m);
        // Crosses, as the static chart draws them (drawCrosses), no line.
        series.push({
          label: s.markers.name,
          stroke: s.color,
          paths: function () { return null; },
          points: { show: false },
          plabCrosses: true,
          value: function (u, v) { return v === undefined || v === null ? "" : "skipped"; }
        });
      }
    });
    return { data: data, series: series };
  }

  // The marker series' points as crosses (a skipped step), over the lines.
  function drawCrosses(u) {
    var ctx = u.ctx, r = 4 * devicePixelRatio;
    u.series.forEach(function (s, k) {
      if (!s.plabCrosses || !s.show) return;
      ctx.save();
      ctx.strokeStyle = s.stroke();
      ctx.lineWidth = 2 * devicePixelRatio;
      u.data[k].forEach(function (v, i) {
        if (v === undefined || v === null) return;
        var x = u.valToPos(u.data[0][i], "x", true), y = u.valToPos(v, "y", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.beginPath();
        ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r);
        ctx.moveTo(x - r, y + r); ctx.lineTo(x + r, y - r);
        ctx.stroke();
      });
      ctx.restore();
    });
  }

  function power2(u, values) {
    return values.map(function (v) { return v > 0 ? "2^" + Math.round(Math.log2(v)) : ""; });
  }

  // The shaded ranges of x (a format's regions behind a histogram), under the lines.
  function drawBands(spec) {
    return function (u) {
      var ctx = u.ctx, box = u.bbox;
      spec.bands.forEach(function (b) {
        var from = Math.max(b.from === null ? -Infinity : b.from, u.scales.x.min);
        var to = Math.min(b.to === null ? Infinity : b.to, u.scales.x.max);
        if (!(to > from)) return;
        var x0 = u.valToPos(from, "x", true), x1 = u.valToPos(to, "x", true);
        ctx.fillStyle = b.color;
        ctx.fillRect(x0, box.top, x1 - x0, box.height);
      });
    };
  }

  function build(block) {
    var spec = JSON.parse(block.textContent);
    var figure = document.getElementById("chart-" + spec.id);
    if (!figure) return;
    var target = figure.querySelector(".interactive");
    var fallback = figure.querySelector(".static");
    var aligned = alignedData(spec);
    var width = Math.max(320, Math.min(960, (target.clientWidth || figure.clientWidth || 760)));
    var yScale = { auto: true };
    if (spec.yScale === "log2") yScale = { distr: 3, log: 2 };
    else if (spec.yScale === "log10") yScale = { distr: 3, log: 10 };
    if (spec.yMin !== undefined || spec.yMax !== undefined) {
      yScale.range = function (u, lo, hi) {
        var r = spec.yScale === "linear" ? uPlot.rangeNum(lo, hi, 0.05, true) : [lo, hi];
        return [spec.yMin !== undefined ? spec.yMin : r[0], spec.yMax !== undefined ? spec.yMax : r[1]];
      };
    }
    var xScale = { time: false };
    if (spec.xMin !== undefined || spec.xMax !== undefined) {
      xScale.range = function (u, lo, hi) {
        // The spec's range for the whole view (uPlot asks with the data's own range, at the
        // start and after a double click); a zoom's range as it is.
        var xs = u.data[0];
        var whole = !xs.length || (lo <= xs[0] && hi >= xs[xs.length - 1]);
        if (!whole) return [lo, hi];
        return [spec.xMin !== undefined ? Math.min(spec.xMin, lo) : lo, spec.xMax !== undefined ? Math.max(spec.xMax, hi) : hi];
      };
    }
    var opts = {
      title: spec.title,
      width: width,
      height: 380,
      scales: { x: xScale, y: yScale },
      series: aligned.series,
      axes: [
        { label: spec.xLabel },
        { label: spec.yLabel, size: 60, values: spec.yScale === "log2" ? power2 : undefined }
      ],
      cursor: { drag: { x: true, y: false, setScale: true } },
      legend: { live: true },
      hooks: {
        drawClear: spec.bands.length ? [drawBands(spec)] : [],
        draw: [drawCrosses]
      }
    };
    target.textContent = "";
    var plot = new uPlot(opts, aligned.data, target);
    if (fallback) fallback.style.display = "none";
    figure.classList.add("is-interactive");
    made.push({ id: spec.id, plot: plot, spec: spec });
  }

  function buildAll() {
    var blocks = document.querySelectorAll("script.plab-chart-data");
    for (var i = 0; i < blocks.length; ++i) {
      try {
        build(blocks[i]);
      } catch (e) {
        // The static chart stays; say why in the console.
        if (window.console) console.error("Precision Lab report: chart " + i + " stays static: " + e);
      }
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", buildAll);
  else buildAll();
})();
