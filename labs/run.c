/*
 * run.c -- one lab, start to end (lab_run): its folder, its CSV, the lab's
 * experiment (labN.c, on the helpers of lab.c), its JSON, its charts.
 */
#include "labs/lab.h"
#include "kernels/backend.h"
#include "labs/lab_plot.h"   /* made by the Makefile: LAB_PLOT and LAB_CHARTS, labs/plot.py and labs/charts.json */
#include "trace/trace.h"
#include <curl/curl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int (*const LABS[LAB_COUNT])(lab *) = { lab1, lab2, lab3, lab4, lab5, lab6, lab7, lab8, lab9, lab10 };

/* OUT/labN.json: the lab, its device and profile, the rows; with --json
 * on stdout too. */
static void write_json(lab *L) {
    char path[1100], err[512];
    gpu_profile g;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "lab", L->n);
    cJSON_AddStringToObject(j, "device", L->device);
    if (!gpu_profile_load(&g, L->profile, err, sizeof err)) {
        cJSON *p = cJSON_AddObjectToObject(j, "profile");
        cJSON_AddStringToObject(p, "name", g.name);
        cJSON_AddNumberToObject(p, "memory_bytes", g.memory_bytes);
        cJSON_AddNumberToObject(p, "memory_bandwidth_bytes_per_s", g.bandwidth);
        cJSON_AddNumberToObject(p, "peak_flops_fp32", g.peak.fp32);
        cJSON_AddNumberToObject(p, "peak_flops_fp16", g.peak.fp16);
        cJSON_AddNumberToObject(p, "launch_latency_s", g.launch_latency_s);
    }
    cJSON_AddItemToObject(j, "rows", L->rows);
    if (L->runs) cJSON_AddItemToObject(j, "runs", L->runs);
    /* the lab's charts, described once for labs/plot.py and the web page */
    cJSON *all = cJSON_Parse(LAB_CHARTS);
    char n[4];
    snprintf(n, sizeof n, "%d", L->n);
    cJSON *mine = cJSON_DetachItemFromObject(all, n);
    if (mine) cJSON_AddItemToObject(j, "charts", mine);
    cJSON_Delete(all);
    snprintf(path, sizeof path, "%s/lab%d.json", L->out, L->n);
    char *s = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    if (f && s) fprintf(f, "%s\n", s);
    if (f) fclose(f);
    if (L->json && s) puts(s);
    free(s);
    cJSON_Delete(j);
}

/* The trace database as one file: out of WAL mode, so no -wal and -shm
 * files stay beside it (a read-only reader cannot remove them). */
static void settle_db(const char *path) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    sqlite3_close(db);
}

/* The charts: labs/plot.py (embedded, as the SQL is) on OUT/labN.json,
 * writing OUT/labN.png and .svg, by the first python3 with matplotlib:
 * the one on PATH (which may be pyenv's), else Debian's, where `make`
 * installs python3-matplotlib. The numbers are the lab, so a missing
 * plotter is one line, not a failure. All it says goes to stderr: stdout
 * may be --json. */
static int plot(const lab *L) {
    char cmd[2800], q[2200];
    size_t k = 0;
    for (const char *c = L->out; *c && k + 5 < sizeof q; c++) k += snprintf(q + k, sizeof q - k, *c == '\'' ? "'\\''" : "%c", *c);
    snprintf(cmd, sizeof cmd, "for py in python3 /usr/bin/python3; do "
                              "$py -c 'import matplotlib' 2>/dev/null && exec $py - '%s/lab%d.json' 1>&2; done; exit 3", q, L->n);
    fflush(stdout);
    FILE *p = popen(cmd, "w");
    if (p) fputs(LAB_PLOT, p);
    int st = p ? pclose(p) : -1;
    if (st == -1 || !WIFEXITED(st)) fprintf(stderr, "lab %d: no charts: cannot run a shell\n", L->n);
    else if (WEXITSTATUS(st) == 3) fprintf(stderr, "lab %d: no charts: no python3 with matplotlib (apt-get install python3-matplotlib); the CSV and JSON are written\n", L->n);
    else if (WEXITSTATUS(st)) fprintf(stderr, "lab %d: the charts failed: python3 labs/plot.py %s/lab%d.json says why\n", L->n, L->out, L->n);
    return st != -1 && WIFEXITED(st) && !WEXITSTATUS(st);
}

int lab_run(int n, const char *device, const char *model, const char *out, int json) {
    lab L = { .n = n, .model = model, .out = out, .json = json };
    snprintf(L.tag, sizeof L.tag, "lab%d", n);
    char out_default[64], path[1100], err[512];
    if (!L.out) { snprintf(out_default, sizeof out_default, "labs/out/lab%d", n); L.out = out_default; }
    if (snprintf(L.db, sizeof L.db, "%s/lab%d.db", L.out, n) >= (int)sizeof L.db || stack_make_parent(L.db)) return stack_fail("--out %s: cannot create the folder", L.out);
    unlink(L.db);   /* each lab run starts a fresh database */
    snprintf(path, sizeof path, "%s/lab%d.csv", L.out, n);
    if (!(L.csv = fopen(path, "w"))) return stack_fail("%s: cannot write", path);
    fprintf(L.csv, "lab,run_id,model,device,dtype,kv_dtype,batch,prompt_len,context,quantity,unit,predicted,measured,ratio,predicted_from,measured_from,reading\n");
    L.rows = cJSON_CreateArray();
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (backend_open(device, err, sizeof err)) { fclose(L.csv); cJSON_Delete(L.rows); return stack_fail("%s", err); }
    /* auto names the device it chose; predictions model the simulated GPU,
     * or the w7900 where nothing is simulated */
    const rt_device *d = rt_device_now();
    snprintf(L.device, sizeof L.device, "%s", !strcmp(device, "auto") ? d->name : device);
    snprintf(L.profile, sizeof L.profile, "%s", d->driver->modeled ? strchr(d->name, ':') + 1 : "w7900");
    double t0 = trace_host_seconds();
    int rc = LABS[n - 1](&L);
    double seconds = trace_host_seconds() - t0;
    fclose(L.csv);
    write_json(&L);
    settle_db(L.db);
    curl_global_cleanup();
    int charts = !rc && plot(&L);
    fflush(stdout);   /* the table first, then this line (stderr), in that order on a terminal */
    fprintf(stderr, "\nlab %d: %s in %.1f s; %s/lab%d.{csv,json,db,pftrace%s}\n", n, rc ? "FAILED" : "done", seconds, L.out, n, charts ? ",png,svg" : "");
    return rc ? 1 : 0;
}
