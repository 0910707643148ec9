/*
 * labs.c -- the labs' results for the charts: GET /api/labs, GET
 * /api/labs/N[?device=PROFILE], POST /api/labs/N/run?device=PROFILE.
 *
 * A result is what `hipath lab N` wrote: LABS/labN/labN.json (the rows)
 * and labN.db (its trace, for the roofline's kernels, v_kernel_time). A
 * run from the page is `hipath lab N --device sim:PROFILE`, this program
 * started again with a fixed argument list, into LABS/web/labN-PROFILE/:
 * every device time in it is modeled from that profile. Paths are made
 * from N and a profile name that must be a known profile's; one lab runs
 * at a time, on a thread of its own: the POST answers 202 at once, and a
 * GET of that lab and profile answers 202 {"status": "running"} until the
 * result is there (or the run's error).
 */
#include "web/server/web_int.h"
#include "trace/sql.h"
#include "layers/common/file.h"
#include "layers/gpu/profile.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LABS 10
#define RUN_LIMIT_S 600

extern char **environ;

/* ?device=NAME, the only parameter: "" when not given, NULL (the 400 made) when bad. */
static enum MHD_Result param_bad(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    const char **dev = cls;
    if (strcmp(key, "device") || !value || !*value || strlen(value) > 40 || strspn(value, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(value)) {
        *dev = NULL;
        return MHD_NO;
    }
    *dev = value;
    return MHD_YES;
}

static const char *device_param(web_req *rq, enum MHD_Result *r) {
    const char *dev = "";
    MHD_get_connection_values(rq->c, MHD_GET_ARGUMENT_KIND, param_bad, &dev);
    gpu_profile g;
    char err[512];
    if (dev && *dev && gpu_profile_load(&g, dev, err, sizeof err)) dev = NULL;
    if (!dev) *r = web_fail(rq, 400, "invalid_parameter", "device", "the only parameter is device=PROFILE, a known profile's name");
    return dev;
}

static void dir_of(const web *w, int n, const char *dev, char *out, int cap) {
    if (*dev) snprintf(out, cap, "%s/web/lab%d-%s", w->labs_dir, n, dev);
    else snprintf(out, cap, "%s/lab%d", w->labs_dir, n);
}

/* The kernels of the lab's trace, per run: the roofline's points. */
static cJSON *kernels(const char *dbpath) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    cJSON *a = cJSON_CreateArray();
    static const char *const keys[] = { "run_id", "device", "model", "name", "clock", "n", "total_ns", "flops", "bytes" };
    if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) st = TSQL_PREP(db, TSQL_WEB_LAB_KERNELS, 2000);
    while (st && sqlite3_step(st) == SQLITE_ROW) cJSON_AddItemToArray(a, web_row(st, keys, 9));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return a;
}

static cJSON *profile_json(const char *name) {
    gpu_profile g;
    char err[512];
    if (gpu_profile_load(&g, name, err, sizeof err)) return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", g.name);
    cJSON_AddNumberToObject(o, "memory_bytes", g.memory_bytes);
    cJSON_AddNumberToObject(o, "bandwidth", g.bandwidth);
    double peaks[] = { g.peak.fp32, g.peak.fp16, g.peak.bf16, g.peak.int8 };
    const char *names[] = { "fp32", "fp16", "bf16", "int8" };
    cJSON *p = cJSON_AddObjectToObject(o, "peak");
    for (int i = 0; i < 4; i++) if (peaks[i] > 0) cJSON_AddNumberToObject(p, names[i], peaks[i]);
    cJSON_AddNumberToObject(o, "launch_latency_s", g.launch_latency_s);
    return o;
}

/* The result of lab n on dev ("": the default run), or the 404. */
static enum MHD_Result result(web *w, web_req *rq, int n, const char *dev) {
    char dir[4200], path[4300], err[512];
    dir_of(w, n, dev, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/lab%d.json", dir, n);
    cJSON *rows = json_read(path, FILE_SMALL, err, sizeof err);
    if (!rows) return web_fail(rq, 404, "lab_not_run", NULL, "lab %d has no result%s%s yet: run it (hipath lab %d, or the page's button)",
                               n, *dev ? " on sim:" : "", dev, n);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "lab", n);
    cJSON_AddStringToObject(o, "profile", dev);
    cJSON_AddItemToObject(o, "result", rows);
    snprintf(path, sizeof path, "%s/lab%d.db", dir, n);
    cJSON_AddItemToObject(o, "kernels", kernels(path));
    char list[1024], *save;
    gpu_profile_list(list, sizeof list);
    cJSON *ps = cJSON_AddObjectToObject(o, "profiles");
    for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
        cJSON *p = profile_json(t);
        if (p) cJSON_AddItemToObject(ps, t, p);
    }
    return web_json(rq, 200, o);
}

static int mkdirs(const char *path) {
    char b[4200];
    snprintf(b, sizeof b, "%s", path);
    for (char *s = b + 1; *s; s++)
        if (*s == '/') { *s = 0; if (mkdir(b, 0777) && errno != EEXIST) return -1; *s = '/'; }
    return mkdir(b, 0777) && errno != EEXIST ? -1 : 0;
}

/* hipath lab n --json --device sim:dev --out DIR, waited for (RUN_LIMIT_S at most). */
static int run_lab(web *w, int n, const char *dev, char *err, int errlen) {
    char dir[4200], log[4300], num[8], device[64];
    dir_of(w, n, dev, dir, sizeof dir);
    if (mkdirs(dir)) return snprintf(err, errlen, "%.300s: %s", dir, strerror(errno)), -1;
    snprintf(log, sizeof log, "%s/lab%d.log", dir, n);
    snprintf(num, sizeof num, "%d", n);
    snprintf(device, sizeof device, "sim:%s", dev);
    char *argv[] = { "hipath", "lab", num, "--json", "--device", device, "--out", dir, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);      /* the server blocks SIGINT and SIGTERM; the lab must not */
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);           /* its own group: a stop reaches its plotting children too */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    pthread_mutex_lock(&w->lab_mu);   /* web_labs_stop sees the pid or stops it from starting */
    int rc = w->lab_stopping ? ECANCELED : posix_spawn(&pid, w->exe, &fa, &at, argv, environ);
    if (!rc) w->lab_pid = pid;
    pthread_mutex_unlock(&w->lab_mu);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc) return snprintf(err, errlen, "cannot start %.300s: %s", w->exe, strerror(rc)), -1;
    /* Its end is seen without reaping it (WNOWAIT): until lab_pid is cleared,
     * the pid web_labs_stop may signal is still this process's. */
    siginfo_t end = { 0 };
    int i = 0;
    for (; i < RUN_LIMIT_S * 10; i++) {
        if (!waitid(P_PID, pid, &end, WEXITED | WNOHANG | WNOWAIT) && end.si_pid == pid) break;
        struct timespec t = { 0, 100000000 };
        nanosleep(&t, NULL);
    }
    pthread_mutex_lock(&w->lab_mu);
    if (i == RUN_LIMIT_S * 10) kill(-pid, SIGTERM);
    w->lab_pid = 0;
    pthread_mutex_unlock(&w->lab_mu);
    int status = 0;
    waitpid(pid, &status, 0);
    if (i == RUN_LIMIT_S * 10)
        return snprintf(err, errlen, "hipath lab %d --device %s took over %d s and was stopped", n, device, RUN_LIMIT_S), -1;
    if (WIFEXITED(status) && !WEXITSTATUS(status)) return 0;
    return snprintf(err, errlen, "hipath lab %d --device %s failed (see %.300s)", n, device, log), -1;
}

/* The run start() set up: its lab and profile stay in w until the next
 * start, which cannot come before this ends. */
static void *lab_thread(void *arg) {
    web *w = arg;
    char err[512] = "";
    int rc = run_lab(w, w->lab_n, w->lab_dev, err, sizeof err);
    pthread_mutex_lock(&w->lab_mu);
    w->lab_state = rc ? LAB_FAILED : LAB_DONE;
    snprintf(w->lab_err, sizeof w->lab_err, "%s", err);
    pthread_mutex_unlock(&w->lab_mu);
    return NULL;
}

/* 202 {"lab", "device", "status": "running"}: asked again until the result is there. */
static enum MHD_Result running(web_req *rq, int n, const char *dev) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "lab", n);
    cJSON_AddStringToObject(o, "device", dev);
    cJSON_AddStringToObject(o, "status", "running");
    return web_json(rq, 202, o);
}

/* POST /api/labs/N/run?device=D: 202 once the run has started. */
static enum MHD_Result start(web *w, web_req *rq, int n, const char *dev) {
    pthread_mutex_lock(&w->lab_mu);
    if (w->lab_state == LAB_RUNNING) {
        pthread_mutex_unlock(&w->lab_mu);
        return web_fail(rq, 409, "lab_running", NULL, "lab %d is running on sim:%s; try again when it is done", w->lab_n, w->lab_dev);
    }
    if (w->lab_state != LAB_NONE) pthread_join(w->lab_thread, NULL);   /* the last run's, ended */
    w->lab_state = LAB_RUNNING;
    w->lab_n = n;
    snprintf(w->lab_dev, sizeof w->lab_dev, "%s", dev);
    int rc = pthread_create(&w->lab_thread, NULL, lab_thread, w);
    if (rc) w->lab_state = LAB_NONE;
    pthread_mutex_unlock(&w->lab_mu);
    return rc ? web_fail(rq, 500, "server_error", NULL, "cannot start a thread for the lab") : running(rq, n, dev);
}

/* GET /api/labs/N?device=D while that run is going (202) or after it failed (500). */
static int pending(web *w, web_req *rq, int n, const char *dev, enum MHD_Result *r) {
    pthread_mutex_lock(&w->lab_mu);
    int mine = *dev && w->lab_n == n && !strcmp(w->lab_dev, dev), state = w->lab_state;
    char err[512];
    snprintf(err, sizeof err, "%s", w->lab_err);
    pthread_mutex_unlock(&w->lab_mu);
    if (!mine || (state != LAB_RUNNING && state != LAB_FAILED)) return 0;
    *r = state == LAB_FAILED ? web_fail(rq, 500, "lab_failed", NULL, "%s", err) : running(rq, n, dev);
    return 1;
}

void web_labs_stop(web *w) {
    pthread_mutex_lock(&w->lab_mu);
    w->lab_stopping = 1;
    if (w->lab_state == LAB_RUNNING && w->lab_pid > 0) kill(-w->lab_pid, SIGTERM);   /* its group; run_lab reaps it */
    int started = w->lab_state != LAB_NONE;
    pthread_mutex_unlock(&w->lab_mu);
    if (started) pthread_join(w->lab_thread, NULL);
}

/* GET /api/labs: which results exist. */
static enum MHD_Result list(web *w, web_req *rq) {
    cJSON *a = cJSON_CreateArray();
    char list[1024], *save, path[4400], dir[4200];
    for (int n = 1; n <= LABS; n++) {
        cJSON *o = cJSON_CreateObject(), *runs = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "lab", n);
        gpu_profile_list(list, sizeof list);
        for (char *t = "", *next = strtok_r(list, ", ", &save); t; t = next, next = next ? strtok_r(NULL, ", ", &save) : NULL) {
            dir_of(w, n, t, dir, sizeof dir);   /* "" first: the default run */
            snprintf(path, sizeof path, "%s/lab%d.json", dir, n);
            if (!access(path, R_OK)) cJSON_AddItemToArray(runs, cJSON_CreateString(t));
        }
        cJSON_AddItemToObject(o, "results", runs);   /* "": the default run; else a profile run from here */
        cJSON_AddItemToArray(a, o);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "labs", a);
    return web_json(rq, 200, o);
}

enum MHD_Result web_labs(web *w, web_req *rq, const char *method, const char *rest) {
    int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    enum MHD_Result r;
    if (!*rest) return get ? list(w, rq) : web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed here", method);
    char *end;
    long n = rest[0] >= '1' && rest[0] <= '9' ? strtol(rest, &end, 10) : 0;   /* 1..LABS, no sign, no zeros in front */
    if (n < 1 || n > LABS || (*end && strcmp(end, "/run")))
        return web_fail(rq, 404, "not_found", NULL, "no such lab: %.40s (labs 1 to %d)", rest, LABS);
    int run = *end != 0;
    if (run ? strcmp(method, "POST") : !get)
        return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed here", method);
    const char *dev = device_param(rq, &r);
    if (!dev) return r;
    if (!run) return pending(w, rq, n, dev, &r) ? r : result(w, rq, n, dev);
    if (!*dev) return web_fail(rq, 400, "invalid_parameter", "device", "say which profile: device=PROFILE");
    return start(w, rq, n, dev);
}
