// A run's observables with plotly.js (copied once into assets/): seed mean, min–max band over
// seeds, and the stored theory of the same config dashed, on the shared time axis (labelled with
// the family's TIME_LABEL, data.time_label). A run on a log record grid gets a log time axis,
// without its t = 0 point (which a log axis cannot show); an observable that never changes is
// one line of text, not a plot.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("series").textContent);
  const SIM = "#1f5fbf", THEORY = "#d9480f";
  const logx = !!data.log_time;
  // the points a plot can show: all on a linear axis, t > 0 on a log one
  const shown = (t) => t.map((x, i) => i).filter((i) => !logx || t[i] > 0);
  const pick = (v, idx) => idx.map((i) => v[i]);
  const constant = (s) => {
    const vals = [...s.mean, ...(s.lo || []), ...(s.hi || [])].filter((v) => v !== null);
    return vals.length > 0 && vals.every((v) => v === vals[0]) ? vals[0] : null;
  };
  document.querySelectorAll("#plots .plot").forEach((div) => {
    const name = div.dataset.name;
    const s = data.run[name];
    const sim = data.kind === "simulation";
    const theories = (data.theory || []).map((th) => th.series[name]).filter(Boolean);
    const value = constant(s);
    if (value !== null && theories.every((v) => constant(v) === value)) {
      div.classList.add("constant");
      div.textContent = name + " = " + value + " at every record" + (theories.length ? " (theory too)" : "");
      return;
    }
    const idx = shown(s.t);
    const x = pick(s.t, idx);
    const traces = [];
    if (sim && s.n > 1) {
      traces.push({ x: x, y: pick(s.hi, idx), mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false });
      traces.push({ x: x, y: pick(s.lo, idx), mode: "lines", line: { width: 0 }, fill: "tonexty",
        fillcolor: "rgba(31,95,191,0.18)", name: "min–max over " + s.n + " seeds", hoverinfo: "skip" });
    }
    traces.push({ x: x, y: pick(s.mean, idx), mode: "lines+markers", marker: { size: 3 }, line: { color: sim ? SIM : THEORY, width: 2 },
      name: sim ? "seed mean" : "theory" });
    (data.theory || []).forEach((th) => {
      const v = th.series[name];
      if (!v) return;
      const j = shown(v.t);
      traces.push({ x: pick(v.t, j), y: pick(v.mean, j), mode: "lines", line: { color: THEORY, width: 2, dash: "dash" },
        name: "theory" + (data.theory.length > 1 ? " " + th.label : "") });
    });
    Plotly.newPlot(div, traces, {
      title: { text: name, font: { size: 14 } },
      margin: { l: 60, r: 12, t: 36, b: 44 },
      xaxis: { title: { text: data.time_label + (logx ? " (log)" : "") }, type: logx ? "log" : "linear" },
      yaxis: { title: { text: name } },
      legend: { orientation: "h", y: -0.25, font: { size: 11 } },
    }, { displayModeBar: false, responsive: true });
  });
})();
