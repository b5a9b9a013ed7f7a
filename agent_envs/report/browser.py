"""The transcript browser: its episodes as inert JSON, its script, and the page's style.

The episodes go into the page as a ``<script type="application/json">`` data
block, which no browser runs, with every ``<``, ``>`` and ``&`` written as a
JSON ``\\u`` escape so that no text in it can close the block.  The script
(:data:`SCRIPT`) reads it with ``JSON.parse`` and builds every element with
``textContent``, never ``innerHTML``: an agent's reply is only ever text.

A first script (:data:`GUARD`, in the head) records into the page
(``#report-errors``) any error the page raises, any ``alert`` call and any
load or script the page's Content-Security-Policy refused, so that a
headless browser's ``--dump-dom`` shows whether anything went wrong.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["GUARD", "SCRIPT", "STYLE", "data_block"]


def data_block(episodes: list[dict[str, Any]], notes: list[str]) -> str:
    """Return the episodes and the notes on them as an inert, escaped JSON data block."""
    payload = json.dumps({"episodes": episodes, "notes": notes}, ensure_ascii=False)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        payload = payload.replace(char, escape)
    return f'<script type="application/json" id="episodes">{payload}</script>'


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;background:#fff}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}
.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
figure.run{margin:0}figcaption,.note{color:#444;font-size:.9em;max-width:40em}
table{border-collapse:collapse;margin:.5em 0}caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #bbb;padding:.3em .5em;text-align:left;vertical-align:top}
td.cell{text-align:center;min-width:7em}.ci{font-size:.85em;opacity:.85}
.partial{font-size:.8em;background:#fd6;color:#000;padding:0 .3em;border-radius:.2em}
td.marked{outline:3px solid #111;outline-offset:-3px}.mark{display:block;font-size:.8em}
.diagnostics h4{margin:.3em 0}
#filters label{margin-right:1em}#episodes-table button{font:inherit}
.episodes{max-height:24em;overflow:auto}
pre{white-space:pre-wrap;word-break:break-word;background:#f5f5f5;padding:.5em;margin:.2em 0;
max-width:60em}
.turn{border-left:3px solid #888;padding-left:.8em;margin:1em 0}.invalid{border-color:#c33}
#report-errors:empty{display:none}#report-errors{color:#b00}
"""

#: The first script, in the head: from the start it records into ``#report-errors``
#: every error, every ``alert`` call and every load or script the page's policy
#: refused (those before the list exists are added when the document is read).
GUARD = r"""
(function () {
  "use strict";
  var pending = [];
  function show(text) {
    var item = document.createElement("li");
    item.textContent = text;
    document.getElementById("report-errors").appendChild(item);
  }
  function record(kind, message) {
    var text = kind + ": " + message;
    if (document.getElementById("report-errors")) { show(text); } else { pending.push(text); }
  }
  document.addEventListener("DOMContentLoaded", function () { pending.forEach(show); });
  window.addEventListener("error", function (e) { record("error", e.message); });
  window.addEventListener("securitypolicyviolation", function (e) {
    record("blocked", e.violatedDirective + " " + e.blockedURI);
  });
  window.alert = function (message) { record("alert", String(message)); };
})();
"""

#: The browser's script.  Plain ES2017, no library; the page runs nothing else.
SCRIPT = r"""
(function () {
  "use strict";
  var FIELDS = [["env", "env"], ["agent", "agent"], ["task", "task"], ["budget", "T"],
                ["success", "success"], ["end", "end reason"]];
  var data = JSON.parse(document.getElementById("episodes").textContent);
  var episodes = data.episodes;
  var filters = document.getElementById("filters");
  var list = document.getElementById("episodes-table");
  var detail = document.getElementById("episode");
  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) { node.textContent = text; }
    if (cls) { node.className = cls; }
    return node;
  }
  function values(key) {
    var seen = {};
    episodes.forEach(function (e) { seen[e[key]] = true; });
    return Object.keys(seen).sort(function (a, b) {
      var x = Number(a), y = Number(b);
      return (isNaN(x) || isNaN(y)) ? (a < b ? -1 : a > b ? 1 : 0) : x - y;
    });
  }
  var selects = {};
  FIELDS.forEach(function (field) {
    var label = el("label", field[1] + " ");
    var select = el("select");
    select.id = "filter-" + field[0];
    select.appendChild(el("option", "all")).value = "";
    values(field[0]).forEach(function (v) { select.appendChild(el("option", v)).value = v; });
    select.addEventListener("change", render);
    label.appendChild(select);
    filters.appendChild(label);
    selects[field[0]] = select;
  });
  function kept() {
    return episodes.filter(function (e) {
      return FIELDS.every(function (f) {
        var want = selects[f[0]].value;
        return want === "" || String(e[f[0]]) === want;
      });
    });
  }
  function pre(label, text) {
    var box = el("div");
    box.appendChild(el("strong", label));
    box.appendChild(el("pre", text));
    return box;
  }
  function show(e) {
    detail.textContent = "";
    detail.appendChild(el("h3", e.env + " / " + e.agent + " / task " + e.task + " / attempt " +
      e.sample + " / T=" + e.budget + ": " + e.end + " after " + e.turns + " turns"));
    if (e.error) { detail.appendChild(pre("error", e.error)); }
    detail.appendChild(pre("first observation", e.observation));
    e.steps.forEach(function (step, i) {
      var turn = el("div", undefined, "turn" + (step.valid === "valid" ? "" : " invalid"));
      turn.appendChild(el("h4", "turn " + (i + 1) + " (" + step.valid + " action)"));
      turn.appendChild(pre("reply as sent", step.raw));
      turn.appendChild(pre("parsed action", step.action));
      turn.appendChild(pre("observation", step.observation));
      detail.appendChild(turn);
    });
  }
  function render() {
    var rows = kept();
    list.textContent = "";
    var head = el("tr");
    ["", "env", "agent", "task", "attempt", "T", "success", "end reason", "turns"].forEach(
      function (h) { head.appendChild(el("th", h)); });
    list.appendChild(head);
    rows.forEach(function (e) {
      var tr = el("tr");
      var open = el("button", "show");
      open.addEventListener("click", function () { show(e); });
      tr.appendChild(el("td")).appendChild(open);
      [e.env, e.agent, e.task, e.sample, e.budget, e.success, e.end, e.turns].forEach(
        function (v) { tr.appendChild(el("td", v)); });
      list.appendChild(tr);
    });
    document.getElementById("episode-count").textContent =
      rows.length + " of " + episodes.length + " episodes";
    detail.textContent = "";
    if (rows.length) { show(rows[0]); }
  }
  var notes = document.getElementById("transcript-notes");
  data.notes.forEach(function (note) { notes.appendChild(el("li", note)); });
  render();
  var status = document.getElementById("report-status");
  status.textContent = "";
  status.setAttribute("data-js", "ok");
})();
"""
