// join.js -- a workshop's student types the code the teacher shows and a
// name, and gets a key of their own (POST /api/workshop/join). It is kept
// in localStorage, so every tab of this browser sends it (common.js), and
// the server shows this student their own requests only.
"use strict";

const code = document.getElementById("code"), status = document.getElementById("status");
code.value = new URLSearchParams(location.search).get("code") || "";

document.getElementById("joinform").addEventListener("submit", async ev => {
  ev.preventDefault();
  const b = document.getElementById("join");
  b.disabled = true;
  status.className = "";
  try {
    const r = await fetch("/api/workshop/join", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ code: code.value.trim(), name: document.getElementById("name").value.trim() }) });
    const body = await r.json().catch(() => null);
    if (!r.ok) throw new Error(body?.error?.message || r.status + " " + r.statusText);
    localStorage.setItem("hipath.student.key", body.key);
    localStorage.setItem("hipath.student.name", body.name);
    sessionStorage.removeItem("hipath.key");   // a key typed earlier would be sent instead
    status.textContent = `${hp.t("joined")} ${body.name}`;
    location.href = "/";
  } catch (e) {
    status.className = "error";
    status.textContent = e.message;
    b.disabled = false;
  }
});
hp.translate();
hp.header("join");
code.focus();
