// The dashboard's page, script and style, shipped as strings so `dist` holds them
// with no build step and no file lookup at run time. The script is plain browser
// JavaScript (no template literals: it lives inside one). Every piece of server
// data reaches the DOM as text (node.append(string) / textContent), never as HTML,
// and tokens stay in memory: never in the URL, a log, or storage.

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Fake server dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/__admin/ui.css">
<script src="/__admin/ui.js" defer></script>
</head>
<body>
<header>
<h1>user-groups fake server</h1>
<span id="origin"></span>
<span class="spacer"></span>
<span id="updated"></span>
<label><input type="checkbox" id="live" checked> live</label>
<button type="button" id="reset" class="danger">Reset server</button>
</header>
<noscript><p class="error">The dashboard needs JavaScript.</p></noscript>
<p id="status" role="status"></p>
<form id="auth" hidden>
<label>This server wants its admin token <input type="password" id="admin-token" autocomplete="off" required></label>
<button type="submit">Use it</button>
</form>
<main>
<section>
<h2>Groups</h2>
<h3>Customer <span class="count" id="count-Customer"></span></h3>
<table aria-label="Customer groups"><thead><tr><th>user_group_id</th><th>name</th><th>mapping</th><th>properties</th><th>team</th><th>token</th></tr></thead><tbody id="groups-Customer"></tbody></table>
<h3>Testing <span class="count" id="count-Testing"></span></h3>
<table aria-label="Testing groups"><thead><tr><th>user_group_id</th><th>name</th><th>mapping</th><th>properties</th><th>team</th><th>token</th></tr></thead><tbody id="groups-Testing"></tbody></table>
</section>
<section>
<h2>Fault rules</h2>
<table aria-label="Fault rules"><thead><tr><th>method</th><th>group</th><th>action</th><th>fires on</th><th>remaining</th></tr></thead><tbody id="rules"></tbody></table>
<form id="fault-form" aria-label="Add a fault rule">
<label>Method <select name="method"><option>GET</option><option>PUT</option><option>POST</option><option>DELETE</option></select></label>
<label>Group id <input name="user_group_id" placeholder="any"></label>
<label>Action <select name="action"><option value="status">answer a status</option><option value="delay">delay</option><option value="reset">reset the connection</option><option value="drop-after-apply">apply, drop the answer</option></select></label>
<label data-for="status">Status <input name="status" type="number" min="200" max="599" value="503" required></label>
<label data-for="status">Retry-After (s) <input name="retryAfter" type="number" min="0" placeholder="none"></label>
<label data-for="delay">Delay (ms) <input name="delayMs" type="number" min="0" max="600000" value="1000" required></label>
<label>Times <input name="times" type="number" min="1" placeholder="every match"></label>
<label>Probability <input name="probability" type="number" min="0" max="1" step="any" placeholder="1"></label>
<button type="submit">Add rule</button>
<button type="button" id="clear-faults">Clear all rules</button>
</form>
</section>
<section>
<h2>Rate limit</h2>
<p id="rate-summary"></p>
<table id="rate-table" aria-label="Rate limit" hidden><thead><tr><th>API key</th><th>environment</th><th>used</th><th>remaining</th><th>window ends in</th></tr></thead><tbody id="rate"></tbody></table>
</section>
<section>
<h2>Requests <span class="count" id="request-count"></span></h2>
<form id="filter" aria-label="Filter requests">
<label>Method <select id="filter-method"><option value="">any</option><option>GET</option><option>PUT</option><option>POST</option><option>DELETE</option></select></label>
<label>Status <input id="filter-status" placeholder="e.g. 503, 4xx, none" size="12"></label>
<label>Group id <input id="filter-id" placeholder="contains" size="14"></label>
<label>Trace id <input id="filter-trace" placeholder="contains" size="14"></label>
<button type="button" id="clear-requests">Clear the journal</button>
</form>
<table aria-label="Requests"><thead><tr><th>time</th><th>method</th><th>status</th><th>code</th><th>environment</th><th>group</th><th>latency</th><th>fault</th><th>trace</th></tr></thead><tbody id="requests"></tbody></table>
</section>
</main>
</body>
</html>
`;

export const DASHBOARD_CSS = `*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1d232b;background:#f5f6f8}
header{display:flex;gap:12px;align-items:center;padding:10px 20px;background:#1d232b;color:#fff}
header h1{font-size:17px;margin:0}
#origin,#updated{color:#aab4c0;font-size:12px}
.spacer{flex:1}
main{padding:0 20px 20px}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:4px 14px 12px;margin:14px 0}
h2{font-size:16px;margin:10px 0}
h3{font-size:14px;margin:12px 0 6px}
.count{color:#6b7683;font-weight:normal;font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef1;vertical-align:top;overflow-wrap:anywhere}
th{background:#f0f2f5;font-weight:600}
td.json,code{font-family:ui-monospace,monospace;font-size:12px}
td.empty{color:#6b7683;font-style:italic}
tr.spent td{color:#8a939e}
tr.failed td{background:#fff4f3}
form{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:end;margin:10px 0}
label{display:flex;flex-direction:column;font-size:12px;color:#4a5562}
input,select,button{font:inherit;padding:3px 6px}
input[type=number]{width:9em}
button{cursor:pointer;border:1px solid #b8c0ca;background:#fff;border-radius:4px}
button.danger{background:#b3261e;color:#fff;border-color:#b3261e}
button.reveal{margin-left:6px;padding:0 6px;font-size:12px}
header label{flex-direction:row;gap:4px;align-items:center;color:#fff}
#status{margin:8px 20px 0}
#status:empty{margin:0}
.error{color:#b3261e}
#auth{margin:8px 20px}
`;

export const DASHBOARD_JS = String.raw`"use strict";
(() => {
  const ENVIRONMENTS = ["Customer", "Testing"];
  const POLL_MS = 1000;
  const MAX_ROWS = 200;
  const MASK = "\u2022".repeat(12);
  let adminToken = ""; // only when the server asks for one; kept in memory only
  let revealed = ""; // the one group whose token is shown
  let groups = [];
  let requests = [];
  const seen = new Map(); // endpoint -> last answer text: redraw only what changed
  let timer;
  let generation = 0;
  const $ = (id) => document.getElementById(id);

  // Strings among the children become text nodes: data never goes through an HTML parser.
  function el(tag, props, children) {
    const node = document.createElement(tag);
    if (props) Object.assign(node, props);
    for (const child of children || []) node.append(child);
    return node;
  }
  const cell = (text, className) => el("td", className ? { className } : null, [text]);
  const jsonText = (value) => (value === undefined ? "" : JSON.stringify(value));
  const emptyRow = (columns, text) => el("tr", null, [el("td", { className: "empty", colSpan: columns }, [text])]);

  function say(text, isError) {
    $("status").textContent = text;
    $("status").className = isError ? "error" : "";
  }

  function timeOf(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return d.toLocaleTimeString("en-GB", { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
  }

  class AdminError extends Error {}
  const describe = (error) => (error instanceof AdminError ? error.message : "cannot reach the fake server (" + error + ")");
  let pollFailed = false;

  // Same origin, JSON body on every change: what the admin endpoints' checks expect.
  async function admin(method, name, body) {
    const headers = { accept: "application/json" };
    if (adminToken !== "") headers["x-admin-token"] = adminToken;
    const init = { method, headers, credentials: "same-origin", cache: "no-store", redirect: "error" };
    if (method !== "GET") {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(body || {});
    }
    const res = await fetch("/__admin/" + name, init);
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: reported below
    }
    if (res.status === 401) $("auth").hidden = false;
    if (!res.ok || json === null || json.success !== 1) {
      const message = json && json.error && typeof json.error.message === "string" ? json.error.message : text.slice(0, 200);
      throw new AdminError(method + " /__admin/" + name + " answered " + res.status + ": " + message);
    }
    return { json, text };
  }

  function groupRow(g) {
    const key = g.environment + "\n" + g.user_group_id;
    const shown = revealed === key;
    const button = el("button", { type: "button", className: "reveal" }, [shown ? "hide" : "show"]);
    button.setAttribute("aria-label", (shown ? "Hide" : "Show") + " the token of " + g.user_group_id);
    button.addEventListener("click", () => {
      revealed = shown ? "" : key;
      renderGroups();
    });
    const token = el("code", { className: shown ? "revealed" : "masked" }, [shown ? g.token : MASK]);
    const row = el("tr", null, [
      cell(g.user_group_id),
      cell(g.name),
      cell(jsonText(g.mapping), "json"),
      cell(jsonText(g.properties), "json"),
      cell(String(g.team_id)),
      el("td", { className: "token" }, [token, button]),
    ]);
    row.dataset.id = g.user_group_id;
    return row;
  }

  function renderGroups() {
    for (const env of ENVIRONMENTS) {
      const mine = groups.filter((g) => g.environment === env);
      $("count-" + env).textContent = mine.length + (mine.length === 1 ? " group" : " groups");
      $("groups-" + env).replaceChildren(...(mine.length > 0 ? mine.map(groupRow) : [emptyRow(6, "No groups.")]));
    }
  }

  function ruleAction(rule) {
    switch (rule.action) {
      case "status":
        return "status " + rule.status + (rule.retryAfter === undefined ? "" : ", Retry-After " + rule.retryAfter + " s");
      case "delay":
        return "delay " + rule.delayMs + " ms";
      case "reset":
        return "reset the connection";
      case "drop-after-apply":
        return "apply, then drop the answer";
      default:
        return String(rule.action);
    }
  }

  function ruleFiring(rule) {
    const parts = [];
    if (rule.times !== undefined) parts.push(rule.times === 1 ? "the next match" : "the next " + rule.times + " matches");
    if (rule.probability !== undefined) parts.push("chance " + rule.probability);
    return parts.length > 0 ? parts.join(", ") : "every match";
  }

  function renderRules(rules) {
    const rows = rules.map((r) => {
      const left = r.remaining === undefined ? "unlimited" : r.remaining === 0 ? "0 (spent)" : String(r.remaining);
      return el("tr", { className: r.remaining === 0 ? "spent" : "" }, [
        cell(r.method),
        cell(r.user_group_id === undefined ? "any" : r.user_group_id),
        cell(ruleAction(r)),
        cell(ruleFiring(r)),
        cell(left),
      ]);
    });
    $("rules").replaceChildren(...(rows.length > 0 ? rows : [emptyRow(5, "No fault rules: every request is handled normally.")]));
    $("clear-faults").disabled = rows.length === 0;
  }

  function renderRate(rate) {
    $("rate-table").hidden = rate === null;
    if (rate === null) {
      $("rate-summary").textContent = "No rate limit configured (start the server with --rate-limit N/SECONDS).";
      $("rate").replaceChildren();
      return;
    }
    $("rate-summary").textContent =
      rate.requests + " requests per " + rate.windowSeconds + " s per API key; past that, 429 with Retry-After.";
    $("rate").replaceChildren(
      ...rate.keys.map((k) =>
        el("tr", { className: k.remaining === 0 ? "spent" : "" }, [
          cell("#" + k.key + (k.readOnly ? " (read-only)" : "")),
          cell(k.environment),
          cell(String(k.used)),
          cell(String(k.remaining)),
          cell(k.resetsInSeconds === null ? "no window open" : k.resetsInSeconds + " s"),
        ]),
      ),
    );
  }

  function groupIdOf(entry) {
    const b = entry.body;
    return b !== null && typeof b === "object" && !Array.isArray(b) && typeof b.user_group_id === "string" ? b.user_group_id : "";
  }

  /** The trace id (the whole traceparent as the cell's title): what a tracing backend searches by. */
  function traceCell(entry) {
    const td = cell(entry.traceId || "", "json trace");
    if (entry.traceparent) td.title = "traceparent: " + entry.traceparent;
    return td;
  }

  function renderRequests() {
    const method = $("filter-method").value;
    const status = $("filter-status").value.trim().toLowerCase().replace(/x+$/, "");
    const id = $("filter-id").value;
    const trace = $("filter-trace").value.trim().toLowerCase();
    const matching = [];
    for (let i = requests.length - 1; i >= 0; i -= 1) {
      const r = requests[i];
      if (method !== "" && r.method !== method) continue;
      if (status !== "" && !(r.status === null ? "none" : String(r.status)).startsWith(status)) continue;
      if (id !== "" && !groupIdOf(r).includes(id)) continue;
      if (trace !== "" && !(r.traceId || "").includes(trace)) continue;
      matching.push(r);
    }
    const rows = matching.slice(0, MAX_ROWS).map((r) =>
      el("tr", { className: r.status === null || r.status >= 400 ? "failed" : "", title: r.path }, [
        cell(timeOf(r.time)),
        cell(r.method),
        cell(r.status === null ? "no answer" : String(r.status)),
        cell(r.code || ""),
        cell(r.environment || ""),
        cell(groupIdOf(r)),
        cell(r.durationMs + " ms"),
        cell(r.fault || ""),
        traceCell(r),
      ]),
    );
    const empty = requests.length > 0 ? "No request matches the filter." : "No requests yet.";
    $("requests").replaceChildren(...(rows.length > 0 ? rows : [emptyRow(9, empty)]));
    $("request-count").textContent =
      matching.length > MAX_ROWS ? "newest " + MAX_ROWS + " of " + matching.length : matching.length + " of " + requests.length;
  }

  function changed(name, text) {
    if (seen.get(name) === text) return false;
    seen.set(name, text);
    return true;
  }

  async function refresh() {
    try {
      const [g, r, f, rl] = await Promise.all([
        admin("GET", "groups"),
        admin("GET", "requests"),
        admin("GET", "faults"),
        admin("GET", "rate-limit"),
      ]);
      if (changed("groups", g.text)) {
        groups = g.json.groups;
        renderGroups();
      }
      if (changed("requests", r.text)) {
        requests = r.json.requests;
        renderRequests();
      }
      if (changed("faults", f.text)) renderRules(f.json.rules);
      renderRate(rl.json.rateLimit);
      $("updated").textContent = "updated " + timeOf(new Date().toISOString());
      if (pollFailed) say("", false); // the server is back; an action's message stays
      pollFailed = false;
    } catch (error) {
      pollFailed = true;
      say(describe(error), true);
    }
  }

  async function loop() {
    const mine = (generation += 1);
    clearTimeout(timer);
    if (!document.hidden) await refresh();
    if (mine === generation && $("live").checked) timer = setTimeout(loop, POLL_MS);
  }

  async function act(done, method, name, body) {
    try {
      await admin(method, name, body);
      say(done, false);
    } catch (error) {
      say(describe(error), true);
    }
    await loop();
  }

  const form = $("fault-form");
  const field = (name) => form.elements.namedItem(name);
  function syncActionFields() {
    for (const label of form.querySelectorAll("[data-for]")) {
      const off = label.dataset.for !== field("action").value;
      label.hidden = off;
      for (const input of label.querySelectorAll("input")) input.disabled = off;
    }
  }
  field("action").addEventListener("change", syncActionFields);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = (name) => field(name).value.trim();
    const rule = { method: value("method"), action: value("action") };
    if (value("user_group_id") !== "") rule.user_group_id = field("user_group_id").value;
    if (rule.action === "status") {
      rule.status = Number(value("status"));
      if (value("retryAfter") !== "") rule.retryAfter = Number(value("retryAfter"));
    }
    if (rule.action === "delay") rule.delayMs = Number(value("delayMs"));
    if (value("times") !== "") rule.times = Number(value("times"));
    if (value("probability") !== "") rule.probability = Number(value("probability"));
    void act("Added a fault rule: " + rule.method + ", " + ruleAction(rule) + ".", "POST", "faults", { rules: [rule] });
  });
  $("clear-faults").addEventListener("click", () => void act("Removed every fault rule.", "DELETE", "faults"));
  $("clear-requests").addEventListener("click", () => void act("Emptied the request journal.", "DELETE", "requests"));
  $("reset").addEventListener("click", () => {
    if (confirm("Reset the fake server? Every group, request, fault rule and rate-limit window goes.")) {
      void act("Reset: the server is as freshly started.", "POST", "reset");
    }
  });
  for (const id of ["filter-method", "filter-status", "filter-id", "filter-trace"]) $(id).addEventListener("input", renderRequests);
  $("auth").addEventListener("submit", (event) => {
    event.preventDefault();
    adminToken = $("admin-token").value;
    $("admin-token").value = "";
    $("auth").hidden = true;
    seen.clear();
    void loop();
  });
  $("live").addEventListener("change", () => ($("live").checked ? void loop() : clearTimeout(timer)));
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && $("live").checked) void loop();
  });

  $("origin").textContent = location.origin;
  syncActionFields();
  void loop();
})();
`;
