// common.js -- what every page shares: the words in English and Chinese,
// the header (model, device, language, API key), calls to the server, and
// numbers with their unit and clock.
"use strict";

const WORDS = {
  en: {
    temperature: "temperature (0: greedy)", max_tokens: "max tokens",
    lab: "Lab", chat: "Chat", timeline: "Timeline", labs: "Labs", send: "Send", newchat: "New chat",
    placeholder: "Type a message (try: Hi)", apikey: "API key", follow: "follow this request →",
    ttft: "TTFT", tokps: "tokens/s", measured: "measured", modeled: "modeled", mixed: "mixed",
    device: "device", waiting: "waiting for the first token…", traceclock_modeled: "on the trace's virtual clock: host measured, device modeled",
    traceclock_measured: "measured on the server's clock", browser: "in this browser (wall clock, measured)",
    nokey: "This server needs an API key: enter it at the top right.",
    fit: "fit", zoomin: "zoom in", zoomout: "zoom out", download: "download Perfetto trace",
    legend_measured: "measured (host or GPU clock)", legend_modeled: "modeled (device profile)", legend_mixed: "mixed (holds a modeled wait)",
    legend_bin: "too small to draw at this zoom (count per pixel)", legend_flow: "flow arrow (the request's path)",
    journey: "The journey", layer: "layer", dir: "dir", time: "time", clock: "clock", share: "share", what: "what happened to the data",
    down: "down", up: "up", total: "total", recent: "Recent requests", norequests: "No requests yet: send one from the chat page.",
    hover: "Hover or click an event for its args; wheel to zoom, drag to pan.", loading: "loading…",
    noclient: "No client events: this request's client did not report its side (the chat page and hipath run do).",
    request: "request", events: "events", reply: "reply", window: "window",
    run_on: "Run on", running: "running the lab (a few seconds to a minute)…", profile: "device profile",
    notrun: "no result for this device yet: run it", default_run: "the default run",
    labtitle: ["", "Follow \"Hi\" through the eight layers", "Capacity: how many KV tokens fit", "Decode against its bound (roofline)",
      "Batching: throughput and B*", "Prefill and decode: TTFT against the prompt", "Context: the step grows with L", "Amdahl: what a 2x GPU buys",
      "Bigger than one GPU: tensor parallelism"],
    ceilings: "ceilings of", kernels: "kernels (modeled on the simulated device)", intensity: "arithmetic intensity (FLOP/byte)",
    c: { window2: "time in request 2's window", nest: "the layers nest, so they overlap", kvbeside: "KV tokens beside bf16 weights (calculator)",
      kvnote: "bf16 KV; 1 = the weights alone do not fit. Predicted by the calculator (labs/bounds.c): modeled.",
      roofnote: "each point is a kernel's FLOPs and bytes over its time (v_kernel_time of the lab's trace). The roofs are the selected profile's datasheet figures.",
      stepbound: "Lab 3: one decode step against its bound", perstep: "s per decode step (B = 1)",
      bound_rb: "bound R/β (calculator)", launches: "launches × latency (predicted)", devstep: "device time a step (modeled)",
      step: "step (mixed; measured on cpu)", batch: "batch B", bydevice: "by device time", bound_decode: "bound decode.t_lower",
      bstar_note: "B* (dashed, calculator) = b_W Π / (2β): past it a decode step is compute-bound; the knee is where the measured curve bends.",
      tpot: "TPOT: each user waits one step a token", knee: "knee", prompt: "prompt tokens P", prefill_step: "prefill step",
      prefill_dev: "prefill device time", bound_prefill: "bound prefill.t_lower", ctx: "mean context of the decode steps (tokens)",
      growth: "growth since the shortest context (µs)", step_median: "decode step, median", dev_median: "device time, median",
      qwen: "Qwen3-8B, RTX PRO 6000, bf16: the bound as the KV cache grows (calculator)", ctxL: "context L (tokens)",
      e2eshare: "share of request 2's e2e", waves: "kernel waves: what a 2x GPU halves (modeled)",
      fixed: "device: launch latency and copies (modeled)", host: "host (mixed)", amdahl: "Amdahl", measured_x: "measured",
      tp_step: "a decode step on GPU 0, ms (modeled), B = 1", tp_split: "split work: the matmuls' waves",
      tp_repl: "replicated: norms, residual adds", tp_launch: "launch latency", tp_ar: "ring all-reduces", tp_other: "gather, copies",
      bound: "bound", tp_measured: "measured (modeled), over N =", tp_ring: "Amdahl + the ring's all-reduces",
      tp_speedup: "decode step speed-up over the smallest N that fits", tp_n: "GPUs N (tensor parallel)" },
    join: "Join", join_title: "Join the workshop", code: "join code", yourname: "your name", joined: "joined as",
    join_link: "join the workshop →", student: "student", teacher: "Teacher", join_at: "Students: open", students: "students",
    live: "Requests, live", owner: "who", tokens: "tokens", finish: "finish", tpot: "TPOT", batch: "The batch, step by step",
    batch_note: "each column is one engine step; each cell a request in it, coloured by its student; the line is the KV blocks in use",
    kv_used: "KV blocks used", ttft_hist: "TTFT, every request so far", tpot_hist: "TPOT, every request so far",
    count: "requests", run_lab: "Run a lab on the projector", open_lab: "open its charts →", refused: "refused",
    remove: "remove", removed: "removed", remove_ask: "Remove this student? Their key stops working.",
    step: "step", teacher_only: "This page is the teacher's: open the URL the server printed (with its #key=…).",
    flops: "FLOP/s", lanes: ["", "1 gpu", "2 runtime", "3 kernels", "4 ops", "5 tensor", "6 scheduler", "7 tokenizer", "8 client"],
  },
  zh: {
    temperature: "温度（0：贪心）", max_tokens: "最大词元数",
    lab: "实验", chat: "对话", timeline: "时间线", labs: "实验", send: "发送", newchat: "新对话",
    placeholder: "输入消息（试试：Hi）", apikey: "API 密钥", follow: "跟踪这个请求 →",
    ttft: "首字延迟", tokps: "词元/秒", measured: "实测", modeled: "建模", mixed: "混合",
    device: "设备", waiting: "等待第一个词元…", traceclock_modeled: "轨迹的虚拟时钟：主机实测，设备建模",
    traceclock_measured: "服务器时钟实测", browser: "本浏览器（挂钟，实测）",
    nokey: "此服务器需要 API 密钥：请在右上角输入。",
    fit: "适配", zoomin: "放大", zoomout: "缩小", download: "下载 Perfetto 轨迹",
    legend_measured: "实测（主机或 GPU 时钟）", legend_modeled: "建模（设备参数）", legend_mixed: "混合（含建模的等待）",
    legend_bin: "此缩放下太小无法单独绘制（每像素计数）", legend_flow: "流箭头（请求的路径）",
    journey: "旅程", layer: "层", dir: "方向", time: "时间", clock: "时钟", share: "占比", what: "数据经历了什么",
    // The journey's "what happened to the data", which the server writes in
    // English (trace/journey.c, as `hipath run` prints it): pattern, Chinese.
    journey_what: [
      [/^POST (\S+) B of JSON to (\S+)$/, "POST $1 字节的 JSON 到 $2"],
      [/^chat template \+ BPE -> (\S+) ids (.*)$/s, "聊天模板 + BPE -> $1 个 id $2"],
      [/^queued, admitted; (\S+) engine steps \(1 prefill \+ (\S+) decode\), (\S+) KV block\(s\)$/,
       "排队、准入；$1 个引擎步（1 个 prefill + $2 个 decode），$3 个 KV 块"],
      [/^(\S+) forward passes; (.*), weights (\S+)$/, "$1 次前向计算；$2，权重 $3"],
      [/^(\S+) ops: (\S+) GFLOP, (\S+) MB moved$/, "$1 个算子：$2 GFLOP，搬运 $3 MB"],
      [/^(\S+) kernel launches, (\S+) wavefronts$/, "$1 次 kernel 启动，$2 个 wavefront"],
      [/^(\S+) copies H2D, (\S+) MB$/, "$1 次 H2D 拷贝，$2 MB"],
      [/^(\S+) copies H2D, (\S+) MB; (\S+) ncclAllReduce, (\S+) gather \((\S+)\)$/, "$1 次 H2D 拷贝，$2 MB；$3 次 ncclAllReduce，$4 次 gather（$5）"],
      [/^(\S+) kernels and copies on (\S+) GPUs of (.*), joined by (.*), modeled; (\S+) allReduce \((\S+) MB, (\S+) ms\)$/,
       "$3 的 $2 块 GPU 上的 $1 个 kernel 与拷贝，由 $4 相连，建模；$5 次 allReduce（$6 MB，$7 ms）"],
      [/^(\S+) kernels and copies on (.*), modeled$/, "$2 上的 $1 个 kernel 与拷贝，建模"],
      [/^(\S+) kernels and copies on (.*), measured$/, "$2 上的 $1 个 kernel 与拷贝，实测"],
      [/^(\S+) copies D2H \(logits\), (\S+) kB$/, "$1 次 D2H 拷贝（logits），$2 kB"],
      [/^(\S+) copies D2H, (\S+) kB$/, "$1 次 D2H 拷贝，$2 kB"],
      [/^(\S+) tokens sampled at temperature (\S+), each replaced by the forced reply's id \(--reply\)$/,
       "以温度 $2 采样 $1 个词元，每个都换成强制回复的 id（--reply）"],
      [/^(\S+) tokens sampled at temperature (\S+)$/, "以温度 $2 采样 $1 个词元"],
      [/^(\S+) ids -> (.*)$/s, "$1 个 id -> $2"],
      [/^(\S+) SSE chunks, then data: \[DONE\]$/, "$1 个 SSE 块，然后 data: [DONE]"],
      [/^first byte, (\S+) deltas rendered: (.*)$/s, "首字节，渲染 $1 个增量：$2"],
    ],
    down: "下行", up: "上行", total: "合计", recent: "最近的请求", norequests: "还没有请求：请在对话页发送一条。",
    hover: "悬停或点击事件查看参数；滚轮缩放，拖动平移。", loading: "加载中…",
    noclient: "没有客户端事件：这个请求的客户端没有上报（对话页和 hipath run 会上报）。",
    request: "请求", events: "事件", reply: "回复", window: "时间窗",
    run_on: "运行于", running: "正在运行实验（几秒到一分钟）…", profile: "设备参数",
    notrun: "此设备还没有结果：请运行", default_run: "默认运行",
    labtitle: ["", "跟着 \"Hi\" 穿过八层", "容量：能放下多少 KV 词元", "解码与其下界（屋顶线）",
      "批处理：吞吐量与 B*", "预填充与解码：TTFT 随提示长度", "上下文：步长随 L 增长", "阿姆达尔：2 倍 GPU 能买到什么",
      "一张 GPU 放不下：张量并行"],
    ceilings: "上限：", kernels: "内核（在模拟设备上建模）", intensity: "算术强度（FLOP/字节）",
    c: { window2: "请求 2 时间窗内的时间", nest: "各层相互嵌套，所以会重叠", kvbeside: "bf16 权重之外能放下的 KV 词元（计算器）",
      kvnote: "bf16 KV；1 表示仅权重就放不下。由计算器（labs/bounds.c）预测：建模。",
      roofnote: "每个点是一个 kernel 的 FLOPs 和字节数除以它的时间（实验 trace 的 v_kernel_time）。屋顶是所选设备参数的数据手册数值。",
      stepbound: "实验 3：一个解码步与其下界", perstep: "每个解码步的秒数（B = 1）",
      bound_rb: "下界 R/β（计算器）", launches: "启动次数 × 延迟（预测）", devstep: "每步设备时间（建模）",
      step: "解码步（混合；cpu 上为实测）", batch: "批大小 B", bydevice: "按设备时间", bound_decode: "下界 decode.t_lower",
      bstar_note: "B*（虚线，计算器）= b_W Π / (2β)：超过它解码步受计算限制；拐点是实测曲线弯折处。",
      tpot: "TPOT：每个用户每个词元等一步", knee: "拐点", prompt: "提示词元数 P", prefill_step: "prefill 步",
      prefill_dev: "prefill 设备时间", bound_prefill: "下界 prefill.t_lower", ctx: "解码步的平均上下文（词元）",
      growth: "相对最短上下文的增长（µs）", step_median: "解码步，中位数", dev_median: "设备时间，中位数",
      qwen: "Qwen3-8B、RTX PRO 6000、bf16：下界随 KV cache 增长（计算器）", ctxL: "上下文 L（词元）",
      e2eshare: "占请求 2 端到端时间的比例", waves: "kernel wave：2 倍 GPU 能减半的部分（建模）",
      fixed: "设备：启动延迟与拷贝（建模）", host: "主机（混合）", amdahl: "阿姆达尔", measured_x: "实测",
      tp_step: "GPU 0 上一个解码步，毫秒（建模），B = 1", tp_split: "被切分的工作：矩阵乘的波次",
      tp_repl: "复制的工作：归一化、残差加", tp_launch: "启动延迟", tp_ar: "环形 all-reduce", tp_other: "gather、拷贝",
      bound: "下界", tp_measured: "实测（建模），相对 N =", tp_ring: "阿姆达尔 + 环形 all-reduce",
      tp_speedup: "解码步相对能放下的最小 N 的加速比", tp_n: "GPU 数 N（张量并行）" },
    join: "加入", join_title: "加入工作坊", code: "加入码", yourname: "你的名字", joined: "已加入：",
    join_link: "加入工作坊 →", student: "学生", teacher: "教师", join_at: "学生请打开", students: "学生",
    live: "实时请求", owner: "谁", tokens: "词元", finish: "结束", tpot: "TPOT", batch: "批次，一步一步",
    batch_note: "每一列是一个引擎步；每一格是其中的一个请求，按学生着色；折线是正在使用的 KV 块",
    kv_used: "已用 KV 块", ttft_hist: "TTFT，到目前为止的所有请求", tpot_hist: "TPOT，到目前为止的所有请求",
    count: "请求数", run_lab: "在投影上运行实验", open_lab: "打开图表 →", refused: "被拒绝",
    remove: "移除", removed: "已移除", remove_ask: "移除这名学生？其密钥将立即失效。",
    step: "步", teacher_only: "此页面属于教师：请打开服务器打印的 URL（带 #key=…）。",
    flops: "FLOP/s", lanes: ["", "1 GPU", "2 运行时", "3 内核", "4 算子", "5 张量", "6 调度器", "7 分词器", "8 客户端"],
  },
};

const hp = {
  lang: localStorage.getItem("hipath.lang") || ((navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en"),
  info: null,
  t(key) { return (WORDS[hp.lang] && WORDS[hp.lang][key]) ?? WORDS.en[key] ?? key; },
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
    const a = Math.abs(ns);
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
