// A run's observables with plotly.js (copied once into assets/): seed mean, min–max band over
// seeds, and the stored theory of the same config dashed, on the shared time axis.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("series").textContent);
  const SIM = "#1f5fbf", THEORY = "#d9480f";
  document.querySelectorAll("#plots .plot").forEach((div) => {
    const name = div.dataset.name;
    const s = data.run[name];
    const traces = [];
    const sim = data.kind === "simulation";
    if (sim && s.n > 1) {
      traces.push({ x: s.t, y: s.hi, mode: "lines", line: { width: 0 }, hoverinfo: "skip", showlegend: false });
      traces.push({ x: s.t, y: s.lo, mode: "lines", line: { width: 0 }, fill: "tonexty",
        fillcolor: "rgba(31,95,191,0.18)", name: "min–max over " + s.n + " seeds", hoverinfo: "skip" });
    }
    traces.push({ x: s.t, y: s.mean, mode: "lines+markers", marker: { size: 3 }, line: { color: sim ? SIM : THEORY, width: 2 },
      name: sim ? "seed mean" : "theory" });
    (data.theory || []).forEach((th, k) => {
      const v = th.series[name];
      if (v) traces.push({ x: v.t, y: v.mean, mode: "lines", line: { color: THEORY, width: 2, dash: "dash" },
        name: "theory" + (data.theory.length > 1 ? " " + th.label : "") });
    });
    const positive = s.t.every((t) => t > 0);
    Plotly.newPlot(div, traces, {
      title: { text: name, font: { size: 14 } },
      margin: { l: 60, r: 12, t: 36, b: 44 },
      xaxis: { title: { text: "t" }, type: data.log_time && positive ? "log" : "linear" },
      yaxis: { title: { text: name } },
      legend: { orientation: "h", y: -0.25, font: { size: 11 } },
    }, { displayModeBar: false, responsive: true });
  });
})();
