// The run table: rows embedded as JSON, sorted, filtered and paged in the page (no server).
(function () {
  "use strict";
  const PAGE = 100;
  const data = JSON.parse(document.getElementById("rows").textContent);
  const cols = data.columns;           // [{key, label, num}]
  const rows = data.rows;              // [[value per column]]
  const text = rows.map((r) => r.map((v) => (v === null ? "" : String(v))).join(" ").toLowerCase());
  let shown = rows.map((_, i) => i);
  let sortCol = -1, sortDir = 1, page = 0;
  const table = document.getElementById("runs");
  const head = table.querySelector("thead tr");
  const body = table.querySelector("tbody");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));

  cols.forEach((c, j) => {
    const th = document.createElement("th");
    th.textContent = c.label;
    th.dataset.col = c.key;
    th.addEventListener("click", () => sortBy(j));
    head.appendChild(th);
  });

  // one number format per column: the decimals that the column's values need at 4 significant
  // digits (so 1 and 0.25 print as 1.00 and 0.25), or 3-digit exponents when it spans more than
  // 10^6 or holds values below 10^-3
  const formats = cols.map((c, j) => {
    const nums = rows.map((r) => r[j]).filter((v) => typeof v === "number" && isFinite(v));
    if (!c.num || !nums.length || nums.every(Number.isInteger)) return (v) => String(v);
    const abs = nums.map(Math.abs).filter((v) => v > 0);
    const lo = Math.min(...abs), hi = Math.max(...abs);
    if (abs.length && (lo < 1e-3 || hi / lo > 1e6)) return (v) => v.toExponential(2);
    const decimals = Math.min(6, Math.max(...nums.map((v) => {
      const t = String(Number(v.toPrecision(4)));
      return t.includes(".") ? t.length - t.indexOf(".") - 1 : 0;
    })));
    return (v) => v.toFixed(decimals);
  });

  function cell(v, c, j) {
    if (v === null || v === undefined || v === "") return '<td class="muted">—</td>';
    if (c.key === "run_id") return '<td><a class="rid" href="runs/' + encodeURIComponent(v) + '.html"><code>' + esc(v) + "</code></a></td>";
    if (c.num && typeof v === "number") return '<td class="num">' + esc(formats[j](v)) + "</td>";
    if (c.key === "n_diverged" && v > 0) return '<td class="num bad">' + esc(v) + "</td>";
    return "<td>" + esc(v) + "</td>";
  }

  function render() {
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    const slice = shown.slice(page * PAGE, (page + 1) * PAGE);
    body.innerHTML = slice.map((i) => "<tr>" + rows[i].map((v, j) => cell(v, cols[j], j)).join("") + "</tr>").join("");
    document.getElementById("count").textContent =
      shown.length + " of " + rows.length + " runs" + (shown.length ? ", rows " + (page * PAGE + 1) + "–" + (page * PAGE + slice.length) : "");
    document.getElementById("page").textContent = "page " + (page + 1) + " / " + pages;
    head.querySelectorAll("th").forEach((th, j) => {
      th.classList.toggle("asc", j === sortCol && sortDir > 0);
      th.classList.toggle("desc", j === sortCol && sortDir < 0);
    });
  }

  function compare(a, b) {
    // missing values last whatever the direction; numbers as numbers, the rest as text
    if (a === null || a === "") return b === null || b === "" ? 0 : 1;
    if (b === null || b === "") return -1;
    if (typeof a === "number" && typeof b === "number") return sortDir * (a - b);
    a = String(a); b = String(b);
    return sortDir * (a < b ? -1 : a > b ? 1 : 0);
  }

  function sortBy(j) {
    sortDir = j === sortCol ? -sortDir : 1;
    sortCol = j;
    shown.sort((x, y) => compare(rows[x][j], rows[y][j]) || x - y);
    page = 0;
    render();
  }

  function filter(q) {
    const words = q.toLowerCase().split(/\s+/).filter(Boolean);
    shown = [];
    for (let i = 0; i < rows.length; i++) if (words.every((w) => text[i].includes(w))) shown.push(i);
    if (sortCol >= 0) shown.sort((x, y) => compare(rows[x][sortCol], rows[y][sortCol]) || x - y);
    page = 0;
    render();
  }

  let timer = null;
  document.getElementById("filter").addEventListener("input", (ev) => {
    clearTimeout(timer);
    timer = setTimeout(() => filter(ev.target.value), 120);
  });
  document.getElementById("prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); });
  document.getElementById("next").addEventListener("click", () => { page += 1; render(); });
  render();
})();
