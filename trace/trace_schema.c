/*
 * trace_schema.c -- the SQLite schema of a hipath trace database, version
 * TRACE_SCHEMA_VERSION (PRAGMA user_version). docs/trace-schema.md explains
 * every table and view. Changing anything here means bumping the version.
 */
#include "trace/trace_sink.h"

const char trace_schema_sql[] =
"CREATE TABLE runs (\n"
"  id INTEGER PRIMARY KEY,\n"
"  command TEXT, model TEXT, device TEXT, clock_domain TEXT,\n"
"  started_at TEXT NOT NULL,          -- UTC, ISO 8601\n"
"  started_unix_ns INTEGER NOT NULL,  -- wall clock at ts_ns = 0\n"
"  ended_at TEXT,                     -- NULL: the process never closed the trace\n"
"  pid INTEGER,\n"
"  hipath_git_rev TEXT NOT NULL\n"
");\n"
"CREATE TABLE layers (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);\n"
"INSERT INTO layers VALUES (1,'gpu'),(2,'runtime'),(3,'kernels'),(4,'ops'),\n"
"  (5,'tensor'),(6,'scheduler'),(7,'tokenizer'),(8,'client');\n"
"CREATE TABLE tracks (\n"
"  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
"  layer INTEGER NOT NULL REFERENCES layers(id),\n"
"  track INTEGER NOT NULL,\n"
"  name TEXT NOT NULL,\n"
"  PRIMARY KEY (run_id, layer, track)\n"
");\n"
"CREATE TABLE slices (\n"
"  id INTEGER PRIMARY KEY,\n"
"  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
"  ts_ns INTEGER NOT NULL,\n"
"  dur_ns INTEGER,                    -- 0 for instants; NULL: begun, never ended\n"
"  layer INTEGER NOT NULL REFERENCES layers(id),\n"
"  direction TEXT NOT NULL,           -- 'down', 'up' or 'none'\n"
"  name TEXT NOT NULL,\n"
"  request INTEGER,                   -- NULL: no request\n"
"  step INTEGER,                      -- NULL: none, 0 prefill, k decode step k\n"
"  clock TEXT NOT NULL,               -- 'measured', 'modeled' or 'mixed' (arg modeled_ns)\n"
"  track INTEGER NOT NULL,\n"
"  depth INTEGER NOT NULL,\n"
"  kind TEXT NOT NULL,                -- 'slice' or 'instant'\n"
"  thread INTEGER NOT NULL,\n"
"  args TEXT                          -- JSON object of the event's arguments, or NULL\n"
");\n"
"CREATE TABLE flows (\n"
"  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
"  flow_id INTEGER NOT NULL,\n"
"  from_slice INTEGER REFERENCES slices(id),\n"
"  to_slice INTEGER REFERENCES slices(id),\n"
"  PRIMARY KEY (run_id, flow_id)\n"
");\n"
"CREATE TABLE counters (\n"
"  id INTEGER PRIMARY KEY,\n"
"  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
"  ts_ns INTEGER NOT NULL,\n"
"  layer INTEGER NOT NULL REFERENCES layers(id),\n"
"  track INTEGER NOT NULL,\n"
"  name TEXT NOT NULL,\n"
"  value REAL NOT NULL,\n"
"  request INTEGER, step INTEGER,\n"
"  clock TEXT NOT NULL                -- 'measured' or 'modeled'\n"
");\n";

/* Views: created on every open if missing, so a later hipath can add one
 * without a version bump. */
const char trace_views_sql[] =
/* Each argument as a row, as version 1 stored them (its labs query this). */
"CREATE VIEW IF NOT EXISTS args AS\n"
"SELECT s.id AS slice_id, j.key AS key, j.value AS value\n"
"FROM slices s, json_each(s.args) j WHERE s.args IS NOT NULL;\n"
"\n"
/* Top-level (depth 0) slices only, so nested slices are not counted twice. */
"CREATE VIEW IF NOT EXISTS v_layer_time AS\n"
"SELECT s.run_id, s.layer, l.name AS layer_name, s.direction, s.clock,\n"
"       COUNT(*) AS n, SUM(s.dur_ns) AS total_ns, AVG(s.dur_ns) AS mean_ns\n"
"FROM slices s JOIN layers l ON l.id = s.layer\n"
"WHERE s.kind = 'slice' AND s.depth = 0 AND s.dur_ns IS NOT NULL\n"
"GROUP BY s.run_id, s.layer, s.direction, s.clock;\n"
"\n"
/* flops / ns = GFLOP/s and bytes / ns = GB/s, over the slices carrying the arg. */
"CREATE VIEW IF NOT EXISTS v_kernel_time AS\n"
"WITH k AS (\n"
"  SELECT run_id, layer, name, clock, dur_ns, json_extract(args, '$.flops') AS flops,\n"
"         json_extract(args, '$.bytes') AS bytes\n"
"  FROM slices WHERE kind = 'slice' AND layer IN (1, 3) AND dur_ns IS NOT NULL)\n"
"SELECT run_id, layer, name, clock,\n"
"       COUNT(*) AS n, SUM(dur_ns) AS total_ns, AVG(dur_ns) AS mean_ns,\n"
"       MIN(dur_ns) AS min_ns, MAX(dur_ns) AS max_ns, SUM(flops) AS flops, SUM(bytes) AS bytes,\n"
"       SUM(flops) / SUM(CASE WHEN flops IS NOT NULL THEN 1.0 * dur_ns END) AS gflop_per_s,\n"
"       SUM(bytes) / SUM(CASE WHEN bytes IS NOT NULL THEN 1.0 * dur_ns END) AS gbyte_per_s\n"
"FROM k GROUP BY run_id, layer, name, clock;\n"
"\n"
/* since_start_ns: start relative to the request's first slice. */
"CREATE VIEW IF NOT EXISTS v_critical_path AS\n"
"SELECT s.run_id, s.request,\n"
"       ROW_NUMBER() OVER w AS seq,\n"
"       s.ts_ns, s.dur_ns, s.ts_ns + s.dur_ns AS end_ns,\n"
"       s.ts_ns - MIN(s.ts_ns) OVER (PARTITION BY s.run_id, s.request) AS since_start_ns,\n"
"       s.layer, l.name AS layer_name, s.direction, s.clock, s.step, s.name,\n"
"       s.id AS slice_id\n"
"FROM slices s JOIN layers l ON l.id = s.layer\n"
"WHERE s.kind = 'slice' AND s.depth = 0 AND s.request IS NOT NULL\n"
"WINDOW w AS (PARTITION BY s.run_id, s.request ORDER BY s.ts_ns, s.layer DESC, s.id);\n"
"\n"
/* Request = slice 'request' on layer 8; one instant 'token' on layer 8 per
 * output token. TTFT = first token - request start; TPOT = mean gap between
 * consecutive tokens. */
"CREATE VIEW IF NOT EXISTS v_request_latency AS\n"
"WITH r AS (\n"
"  SELECT run_id, request, MIN(ts_ns) AS start_ns, MAX(ts_ns + dur_ns) AS end_ns\n"
"  FROM slices WHERE layer = 8 AND kind = 'slice' AND name = 'request'\n"
"    AND request IS NOT NULL GROUP BY run_id, request),\n"
"t AS (\n"
"  SELECT run_id, request, COUNT(*) AS n_tokens, MIN(ts_ns) AS first_ns, MAX(ts_ns) AS last_ns\n"
"  FROM slices WHERE layer = 8 AND kind = 'instant' AND name = 'token'\n"
"    AND request IS NOT NULL GROUP BY run_id, request)\n"
"SELECT r.run_id, r.request, r.start_ns, COALESCE(t.n_tokens, 0) AS n_tokens,\n"
"       t.first_ns - r.start_ns AS ttft_ns,\n"
"       CASE WHEN t.n_tokens > 1 THEN (t.last_ns - t.first_ns) / (t.n_tokens - 1.0) END AS tpot_ns,\n"
"       r.end_ns - r.start_ns AS e2e_ns\n"
"FROM r LEFT JOIN t ON t.run_id = r.run_id AND t.request = r.request;\n"
"\n"
/* Engine steps (layer 6) with their batch and what layers 4, 3 and 1 did in
 * them: op FLOPs and bytes, kernel launches, device time (modeled on sim). */
"CREATE VIEW IF NOT EXISTS v_steps AS\n"
"WITH op AS (\n"
"  SELECT run_id, step, SUM(json_extract(args, '$.flops')) AS op_flops,\n"
"         SUM(json_extract(args, '$.bytes')) AS op_bytes,\n"
"         SUM(json_extract(args, '$.weight_bytes')) AS weight_bytes,\n"
"         SUM(CASE WHEN name IN ('attention', 'mla_attention') THEN json_extract(args, '$.bytes') END) AS attention_bytes,\n"
"         COUNT(*) AS n_ops\n"
"  FROM slices WHERE layer = 4 AND direction = 'down' AND step IS NOT NULL AND args IS NOT NULL\n"
"  GROUP BY run_id, step),\n"
"dev AS (\n"
"  SELECT run_id, step, SUM(CASE WHEN layer = 1 AND track <= 1 THEN dur_ns END) AS gpu_ns,\n"
"         SUM(layer = 1 AND track <= 1) AS n_device, SUM(layer = 3) AS n_launches\n"
"  FROM slices WHERE layer IN (1, 3) AND kind = 'slice' AND step IS NOT NULL GROUP BY run_id, step),\n"
"st AS (\n"
"  SELECT run_id, id AS slice_id, step, ts_ns, dur_ns,\n"
"         json_extract(args, '$.n_prefill') AS n_prefill,\n"
"         json_extract(args, '$.n_decode') AS n_decode,\n"
"         json_extract(args, '$.tokens') AS tokens,\n"
"         json_extract(args, '$.requests') AS requests,\n"
"         json_extract(args, '$.kv_blocks_used') AS kv_blocks_used\n"
"  FROM slices WHERE layer = 6 AND name = 'step' AND kind = 'slice' AND args IS NOT NULL)\n"
"SELECT st.*, op.n_ops, op.op_flops, op.op_bytes, op.weight_bytes, op.attention_bytes,\n"
"       dev.n_launches, dev.n_device, dev.gpu_ns\n"
"FROM st LEFT JOIN op ON op.run_id = st.run_id AND op.step = st.step\n"
"LEFT JOIN dev ON dev.run_id = st.run_id AND dev.step = st.step;\n"
"\n"
/* Which requests each engine step served: one row per (step, request).
 * The step's arg `requests` is a JSON array; files written before it was
 * were a comma-separated list, read here as one. */
"CREATE VIEW IF NOT EXISTS v_step_requests AS\n"
"WITH st AS (SELECT run_id, id, step, json_extract(args, '$.requests') AS r FROM slices\n"
"            WHERE layer = 6 AND name = 'step' AND kind = 'slice' AND args IS NOT NULL)\n"
"SELECT st.run_id, st.id AS slice_id, st.step, CAST(j.value AS INTEGER) AS request\n"
"FROM st, json_each(CASE WHEN json_valid(st.r) THEN st.r ELSE '[' || st.r || ']' END) j;\n"
"\n"
/* Layer-4 operators, totals by name (both directions: 'sample' goes up). */
"CREATE VIEW IF NOT EXISTS v_op_time AS\n"
"SELECT run_id, name, direction, clock, COUNT(*) AS n, SUM(dur_ns) AS total_ns,\n"
"       AVG(dur_ns) AS mean_ns, SUM(json_extract(args, '$.flops')) AS flops,\n"
"       SUM(json_extract(args, '$.bytes')) AS bytes\n"
"FROM slices WHERE layer = 4 AND kind = 'slice' AND dur_ns IS NOT NULL\n"
"GROUP BY run_id, name, direction, clock;\n";

/* The secondary indexes. A new file gets them when its first run closes:
 * building an index once costs less than updating it at every row, and the
 * work moves out of the run being measured. A file that already has rows
 * gets them when it is opened, so a first run that was killed before
 * closing leaves them to the next open. */
const char trace_index_sql[] =
"CREATE INDEX IF NOT EXISTS slices_layer_name ON slices(run_id, layer, name);\n"
"CREATE INDEX IF NOT EXISTS slices_request_ts ON slices(run_id, request, ts_ns);\n"
"CREATE INDEX IF NOT EXISTS counters_name_ts ON counters(run_id, name, ts_ns);\n";

/* Version 1 kept one row per argument in a table `args`; version 2 keeps
 * them as JSON on the slice (one row per event is most of the cost of
 * writing a trace) and `args` is a view. The views are dropped here and
 * made again from trace_views_sql; all of it in the caller's transaction. */
const char trace_migrate_v1_sql[] =
"DROP VIEW IF EXISTS v_layer_time; DROP VIEW IF EXISTS v_kernel_time;\n"
"DROP VIEW IF EXISTS v_critical_path; DROP VIEW IF EXISTS v_request_latency;\n"
"DROP VIEW IF EXISTS v_steps; DROP VIEW IF EXISTS v_op_time;\n"
"ALTER TABLE slices ADD COLUMN args TEXT;\n"
"UPDATE slices SET args = (SELECT json_group_object(key, value) FROM args WHERE slice_id = slices.id)\n"
"  WHERE id IN (SELECT slice_id FROM args);\n"
"DROP TABLE args;\n";
