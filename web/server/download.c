/*
 * download.c -- GET /api/requests/N/perfetto: the request's window as a
 * .pftrace, made from the SQLite rows by the Perfetto sink
 * (trace/export.c) into a file in the trace's own folder, which is
 * unlinked as soon as it is open: the response reads it, and it is gone.
 */
#include "web/server/web_int.h"
#include "trace/export.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

enum MHD_Result web_perfetto(web *w, web_req *rq, int64_t run, int64_t req) {
    enum MHD_Result r;
    sqlite3 *db = web_db(w, rq, &r);
    if (!db) return r;
    int64_t t0, t1;
    if (web_request_window(db, run, req, &t0, &t1)) {
        r = web_no_request(w, rq, db, run, req);
        sqlite3_close(db);
        return r;
    }
    sqlite3_close(db);

    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/.hipath-export-XXXXXX", w->trace_dir);
    int tmp = mkstemp(path);
    if (tmp < 0) return web_fail(rq, 500, "server_error", NULL, "cannot make a file in the trace's folder");
    close(tmp);
    int64_t n;
    web_hold(w);
    int rc = trace_export_perfetto(w->db, run, t0, t1, path, &n, err, sizeof err);
    int fd = rc ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    unlink(path);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        if (fd >= 0) close(fd);
        return web_fail(rq, 500, "server_error", NULL, "the export failed: %s", rc ? err : "cannot reopen it");
    }
    struct MHD_Response *resp = web_file(rq, fd, (uint64_t)st.st_size, 1);   /* takes fd; protobuf's repeated names compress */
    if (!resp) return MHD_NO;
    char name[160], count[32];
    snprintf(name, sizeof name, "attachment; filename=\"hipath-run%lld-request%lld.pftrace\"", (long long)run, (long long)req);
    snprintf(count, sizeof count, "%lld", (long long)n);
    MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
    MHD_add_response_header(resp, "Content-Disposition", name);
    MHD_add_response_header(resp, "X-Hipath-Events", count);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    web_headers(resp);
    return web_answer(rq, 200, resp);
}
