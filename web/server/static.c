/*
 * static.c -- the pages: files under the static folder and nothing else.
 *
 * MHD has already decoded the path once (%2e%2e is ".." here; %252e is
 * "%2e", which no file name has: decoding again is how traversals get
 * through). A path is refused unless every segment is plain (letters,
 * digits, '-', '_', '.', not starting with a dot), and is opened one
 * segment at a time beneath the folder's descriptor with O_NOFOLLOW, so
 * no symlink is followed, inside the folder or out of it.
 */
#include "web/server/web_int.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* compresses: gzip makes it smaller (gzip.c); a PNG is compressed already. */
static const struct { const char *ext, *type; int compresses; } TYPES[] = {
    { ".html", "text/html; charset=utf-8", 1 }, { ".js", "text/javascript; charset=utf-8", 1 },
    { ".css", "text/css; charset=utf-8", 1 },   { ".svg", "image/svg+xml", 1 },
    { ".png", "image/png", 0 },                 { ".json", "application/json", 1 },
    { ".ico", "image/x-icon", 1 },              { ".txt", "text/plain; charset=utf-8", 1 },
};

/* Only the page's own files, and the page only talks to this server. */
#define CSP "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; " \
            "form-action 'self'; frame-ancestors 'none'"

static int type_of(const char *path) {
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof TYPES / sizeof *TYPES; i++)
        if (!strcmp(dot, TYPES[i].ext)) return (int)i;
    return -1;
}

/* The pages' own paths: /trace/7 and /labs/3 are pages, not files. */
static const char *page_of(const char *url) {
    if (!strcmp(url, "/")) return "index.html";
    if (!strcmp(url, "/trace") || !strcmp(url, "/trace/")) return "trace.html";
    if (!strncmp(url, "/trace/", 7) && url[7] && strspn(url + 7, "0123456789") == strlen(url + 7)) return "trace.html";
    if (!strcmp(url, "/labs") || !strcmp(url, "/labs/")) return "labs.html";
    if (!strcmp(url, "/join")) return "join.html";
    if (!strcmp(url, "/teacher")) return "teacher.html";
    if (!strncmp(url, "/labs/", 6) && url[6] >= '1' && url[6] <= '9' && (!url[7] || (!strcmp(url + 6, "10")))) return "labs.html";
    return NULL;
}

/* 0: a plain relative path; else the HTTP status that refuses it. */
static int plain(const char *p) {
    if (!*p || strlen(p) > 255) return 404;
    for (const char *s = p; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./", *s)) return 404;
    for (const char *seg = p; seg; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL)
        if (*seg == '.' || *seg == '/' || !*seg) return 403;   /* "..", ".hidden", "//", a trailing '/' */
    return 0;
}

/* Open rel beneath dir, following no symlink; -1 with errno. */
static int open_beneath(int dir, const char *rel) {
    char buf[256], *save, *seg;
    snprintf(buf, sizeof buf, "%s", rel);
    int fd = dup(dir);
    seg = strtok_r(buf, "/", &save);
    while (fd >= 0 && seg) {
        char *next = strtok_r(NULL, "/", &save);
        int f = openat(fd, seg, next ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC : O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        int e = errno;
        close(fd);
        errno = e;
        fd = f;
        seg = next;
    }
    return fd;
}

enum MHD_Result web_static(web *w, web_req *rq, const char *method, const char *url) {
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return web_fail(rq, 405, "method_not_allowed", NULL, "%.16s is not allowed on %.200s", method, url);
    const char *rel = page_of(url);
    if (!rel) {
        if (url[0] != '/') return web_fail(rq, 404, "not_found", NULL, "no such page");
        int refused = plain(url + 1);
        if (refused) return web_fail(rq, refused, refused == 403 ? "forbidden" : "not_found", NULL, "no such page: %.200s", url);
        rel = url + 1;
    }
    int t = type_of(rel);
    if (t < 0) return web_fail(rq, 404, "not_found", NULL, "no such page: %.200s", url);
    int fd = open_beneath(w->root_fd, rel);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int symlink = fd < 0 && errno == ELOOP;
        if (fd >= 0) close(fd);
        return web_fail(rq, symlink ? 403 : 404, symlink ? "forbidden" : "not_found", NULL, "no such page: %.200s", url);
    }
    struct MHD_Response *r = web_file(rq, fd, (uint64_t)st.st_size, TYPES[t].compresses);   /* takes fd */
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", TYPES[t].type);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    web_headers(r);
    if (!strncmp(TYPES[t].type, "text/html", 9)) MHD_add_response_header(r, "Content-Security-Policy", CSP);
    return web_answer(rq, 200, r);
}
