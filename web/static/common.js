// common.js -- what every page shares: the header (model, device, language,
// API key), calls to the server, numbers with their unit and clock, and
// the words of words.js in the page's language.
"use strict";

const hp = {
  lang: localStorage.getItem("hipath.lang") || ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en"),
  info: null,
  t(key) { return (WORDS[hp.lang] && WORDS[hp.lang][key]) ?? WORDS.en[key] ?? key; },
  // Layer l's lane, "6 scheduler", in the trace's own words (/api/info's names).
  lane(l) {
    const name = hp.info?.names?.layers?.[l] ?? "";
    return l ? `${l} ${WORDS[hp.lang]?.["layer_" + name] ?? name}` : "";
  },
  // A sentence the server wrote in English, in this page's language when a
  // pattern of WORDS[lang][table] matches it (else as it came).
  tr(table, text) {
    for (const [re, to] of WORDS[hp.lang]?.[table] ?? []) if (re.test(text)) return text.replace(re, to);
    return text;
  },

  // Every text in the page that has data-i18n="key".
  translate() {
    document.documentElement.lang = hp.lang === "zh" ? "zh-CN" : "en";
    for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = hp.t(el.dataset.i18n);
    for (const el of document.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = hp.t(el.dataset.i18nPlaceholder);
  },

  // The key typed at the top right, else a workshop student's (join.js keeps it across tabs).
  key() { return sessionStorage.getItem("hipath.key") || localStorage.getItem("hipath.student.key") || ""; },

  headers(extra) {
    const h = Object.assign({}, extra || {});
    const key = hp.key();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  },

  // GET or POST JSON; throws Error(message) with the server's error message.
  // A 429 with a short Retry-After (a student's /api/ requests under way
  // at once have a limit) is tried again after it, a few times.
  async api(path, opts) {
    let r;
    for (let tries = 0; ; tries++) {
      r = await fetch(path, Object.assign({}, opts, { headers: hp.headers((opts || {}).headers) }));
      const wait = Number(r.headers.get("Retry-After"));
      if (r.status !== 429 || !(wait > 0 && wait <= 5) || tries === 5) break;
      await new Promise(ok => setTimeout(ok, wait * 1000));
    }
    const body = r.headers.get("Content-Type")?.startsWith("application/json") ? await r.json() : null;
    if (!r.ok) {
      const e = new Error(body?.error?.message || r.status + " " + r.statusText);
      e.status = r.status;
      throw e;
    }
    return body;
  },

  // The header: brand, pages, model and device, language, API key.
  async header(here) {
    const h = document.querySelector("header");
    h.innerHTML = `<span class="brand">hipath</span>
      <nav><a href="/" data-i18n="chat"></a><a href="/trace" data-i18n="timeline"></a><a href="/labs" data-i18n="labs"></a></nav>
      <span class="model" id="model"></span><span class="spacer"></span>
      <form class="key" id="keyform"><label><span data-i18n="apikey"></span> <input id="key" type="password" autocomplete="off"></label></form>
      <button id="lang">中文 / EN</button>`;
    h.querySelectorAll("nav a")[["chat", "timeline", "labs"].indexOf(here)]?.classList.add("here");
    const key = h.querySelector("#key");
    key.value = hp.key();
    const save = ev => { ev?.preventDefault(); sessionStorage.setItem("hipath.key", key.value); location.reload(); };
    key.addEventListener("change", save);
    h.querySelector("#keyform").addEventListener("submit", save);
    h.querySelector("#lang").addEventListener("click", () => {
      hp.lang = hp.lang === "zh" ? "en" : "zh";
      localStorage.setItem("hipath.lang", hp.lang);
      hp.translate();
      document.dispatchEvent(new Event("hipath-lang"));
    });
    hp.translate();
    try {
      hp.info = await hp.api("/api/info");
      const m = document.getElementById("model");
      m.textContent = `${hp.info.model.split("/").pop()} · ${hp.info.device} `;
      m.append(hp.clockBadge(hp.info.modeled ? "modeled" : "measured"));
      if (hp.info.student) m.append(` · ${hp.t("student")} ${localStorage.getItem("hipath.student.name") || "#" + hp.info.student}`);
    } catch (e) {
      if (e.status === 401 && here !== "join") {
        const m = document.getElementById("model");
        m.textContent = hp.t("nokey") + " ";
        const a = document.createElement("a");
        a.href = "/join";
        a.textContent = hp.t("join_link");
        m.append(a);
      }
    }
  },

  clockBadge(clock) {
    const b = document.createElement("span");
    b.className = "badge " + clock;
    b.dataset.i18n = clock;
    b.textContent = hp.t(clock);
    return b;
  },

  // 1234567 ns -> "1.23 ms"
  dur(ns) {
    if (ns == null || !isFinite(ns)) return "–";
    const a = Math.abs(Number((+ns).toPrecision(3)));   // the unit of the value shown: 999.6 µs is "1.00 ms", not "1.00e+3 µs"
    if (a >= 1e9) return (ns / 1e9).toPrecision(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toPrecision(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toPrecision(3) + " µs";
    return Math.round(ns) + " ns";
  },

  // 1.5e12 -> "1.5 T"
  si(v) {
    if (v == null || !isFinite(v)) return "–";
    if (v === 0) return "0";
    const units = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"], [1, ""], [1e-3, "m"], [1e-6, "µ"], [1e-9, "n"]];
    for (const [f, u] of units) if (Math.abs(v) >= f) return String(+(v / f).toPrecision(3)) + (u ? " " + u : "");
    return v.toExponential(2);
  },

  esc(s) { return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]); },
};
