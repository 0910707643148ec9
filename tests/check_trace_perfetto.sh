#!/bin/sh
# The Perfetto sink's .pftrace, decoded by protoc (not by protobuf-c, which
# wrote it) against trace/perfetto_trace.proto: a process track, the eight
# layer tracks in order client..gpu, every event on a described track,
# begin/end balanced and nested per track, flows that start and end,
# counters on counter tracks, the sequence started as Perfetto expects, and
# every interned iid (event names, categories, annotation names and values)
# defined on the sequence before it is used, by a packet that needs it.
cd "$(dirname "$0")/.." || exit 1
bin=build/tests/test_trace
[ -x "$bin" ] || { echo "no $bin: run make first"; exit 77; }
command -v protoc >/dev/null 2>&1 || { echo "no protoc"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$bin" perfetto "$tmp/t.pftrace" || exit 1
protoc -I. --decode=perfetto.protos.Trace trace/perfetto_trace.proto \
    < "$tmp/t.pftrace" > "$tmp/t.txt" || { echo "protoc could not decode the trace"; exit 1; }
python3 - "$tmp/t.txt" <<'EOF'
import sys
sys.path.insert(0, "tests")
from protoc_text import parse


packets = parse(open(sys.argv[1]))["packet"]
fails = []
def check(ok, msg):
    if not ok:
        fails.append(msg)

first = packets[0]
check(first.get("sequence_flags") == ["1"], "first packet does not clear incremental state")
check(first.get("first_packet_on_sequence") == ["true"], "first packet lacks first_packet_on_sequence")
check(all(p.get("trusted_packet_sequence_id") == ["1"] for p in packets),
      "a packet without trusted_packet_sequence_id 1")

# interned strings: kind -> iid -> string, as the packets define them
interned = {k: {} for k in ("event_names", "event_categories", "debug_annotation_names",
                            "debug_annotation_string_values")}
def resolve(kind, iid, i):
    v = interned[kind].get(iid)
    check(v is not None, f"packet {i}: {kind} iid {iid} used before it is defined")
    return v
tracks, events = {}, []
for i, p in enumerate(packets):
    for d in p.get("interned_data", []):
        for kind, table in interned.items():
            for entry in d.get(kind, []):
                iid, name = entry["iid"][0], (entry.get("name") or entry.get("str"))[0]
                check(table.get(iid, name) == name, f"{kind} iid {iid} redefined")
                table[iid] = name
    if "track_event" in p:
        check(p.get("sequence_flags") == ["2"], f"packet {i}: track event without SEQ_NEEDS_INCREMENTAL_STATE")
    for e in p.get("track_event", []):
        if "name_iid" in e:
            e["name"] = [resolve("event_names", e["name_iid"][0], i)]
        if "category_iids" in e:
            e["categories"] = [resolve("event_categories", c, i) for c in e["category_iids"]]
        for a in e.get("debug_annotations", []):
            if "name_iid" in a:
                a["name"] = [resolve("debug_annotation_names", a["name_iid"][0], i)]
            if "string_value_iid" in a:
                a["string_value"] = [resolve("debug_annotation_string_values", a["string_value_iid"][0], i)]
    for d in p.get("track_descriptor", []):
        uuid = d["uuid"][0]
        check(uuid not in tracks, f"track {uuid} described twice")
        tracks[uuid] = dict(d, index=i)
    for e in p.get("track_event", []):
        events.append((int(p["timestamp"][0]), i, e))

procs = [u for u, d in tracks.items() if "process" in d]
check(len(procs) == 1 and tracks[procs[0]]["process"][0]["process_name"] == ["hipath"],
      "no single process track named hipath")
names = ["gpu", "runtime", "kernels", "ops", "tensor", "scheduler", "tokenizer", "client"]
layer = {}
for u, d in tracks.items():
    if d.get("parent_uuid") == procs[:1]:
        layer[d["name"][0]] = d
for n, name in enumerate(names, 1):
    d = layer.get(f"{n} {name}")
    check(d is not None, f"no track for layer {n} {name}")
    if d:
        check(int(d["sibling_order_rank"][0]) == 8 - n, f"layer {n} is not at rank {8 - n}")
check(tracks[procs[0]].get("child_ordering") == ["EXPLICIT"], "process track ordering not explicit")

depth, opened = {}, set()
flows_out, flows_end = set(), set()
kinds = {}
for ts, i, e in sorted(events, key=lambda x: (x[0], x[1])):
    u, t = e["track_uuid"][0], e["type"][0]
    kinds[t] = kinds.get(t, 0) + 1
    check(u in tracks and tracks[u]["index"] < i, f"event on undescribed track {u}")
    if t == "TYPE_COUNTER":
        check("counter" in tracks.get(u, {}), f"counter on a non-counter track {u}")
        continue
    check("counter" not in tracks.get(u, {}), f"slice on counter track {u}")
    if t == "TYPE_SLICE_BEGIN":
        depth[u] = depth.get(u, 0) + 1
        check("name" in e, "slice begin without a name")
    elif t == "TYPE_SLICE_END":
        depth[u] = depth.get(u, 0) - 1
        check(depth[u] >= 0, f"end without begin on track {u}")
    flows_out.update(e.get("flow_ids", []))
    flows_end.update(e.get("terminating_flow_ids", []))
check(all(v == 0 for v in depth.values()), f"unbalanced tracks: {[(tracks[u]['name'], v) for u, v in depth.items() if v]}")
check(flows_out and flows_out == flows_end, f"flows out {flows_out} vs terminated {flows_end}")
check(kinds.get("TYPE_COUNTER") == 5, "expected 5 counter events (2 samples, then a series of 3)")
check(kinds.get("TYPE_INSTANT", 0) >= 40000, "instants missing")
check(any(d.get("name") == ["stream 1"] for d in tracks.values()), "named child track 'stream 1' missing")
begun = {e["name"][0] for _, _, e in events if e["type"][0] == "TYPE_SLICE_BEGIN" and "name" in e}
check({"request", "tokenize", "a_outer", "a_inner", "b_outer", "schedule", "gemm", "launch"} <= begun, f"slice names: {begun}")
check({e["categories"][0] for _, _, e in events if "categories" in e} == {"client", "tokenizer", "ops", "scheduler",
      "kernels", "gpu", "runtime", "tensor"}, "categories are not the layers' names")
dirs = {a["string_value"][0] for _, _, e in events for a in e.get("debug_annotations", []) if a.get("name") == ["direction"]}
check(dirs == {"down", "up", "none"}, f"direction values {dirs}")
ticks = [a for _, _, e in events if e.get("name") == ["tick"] for a in e.get("debug_annotations", []) if a.get("name") == ["i"]]
check(len(ticks) >= 40000 and all(a.get("int_value") for a in ticks[1:]), "tick args lost")
check(any("(thread" in d.get("name", [""])[0] for d in tracks.values()),
      "no per-thread track for the second thread on layer 4")
if fails:
    print("\n".join(fails))
    sys.exit(1)
print(f"ok: {len(packets)} packets, {len(tracks)} tracks, {kinds}")
EOF
