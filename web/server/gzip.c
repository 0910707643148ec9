/*
 * gzip.c -- Content-Encoding: gzip (zlib) for the pages, the JSON and the
 * downloads, when the request's Accept-Encoding takes it (RFC 9110,
 * 12.5.3). Every response of a type that compresses says
 * `Vary: Accept-Encoding`, so a cache keeps the two apart. A body under
 * MIN_GZIP bytes goes as it is: it takes a packet either way, and the
 * client would spend more on inflating it than the wire saves. The SSE
 * streams are layer 6's and never come here: each event must leave at
 * once, not wait in a compressor's window.
 */
#include "web/server/web_int.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#define MIN_GZIP 1024
#define MAX_GZIP_FILE (256u << 20)   /* a bigger file goes as it is, read straight from disk */

/* ---- Accept-Encoding ---- */

/* The q of the codings that matter here, in thousandths; -1: not named. */
typedef struct { int gzip, star, identity; } weights;

static int ows(char ch) { return ch == ' ' || ch == '\t'; }

/* qvalue = "0" ["." 0*3DIGIT] / "1" ["." 0*3"0"], in thousandths; -1: malformed. */
static int qvalue(const char *s, const char *end) {
    while (end > s && ows(end[-1])) end--;
    if (s == end || (*s != '0' && *s != '1')) return -1;
    int q = (*s++ - '0') * 1000;
    if (s < end && (*s++ != '.' || end - s > 3)) return -1;
    for (int scale = 100; s < end; s++, scale /= 10) {
        if (*s < '0' || *s > '9') return -1;
        q += (*s - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* One element, "coding" or "coding;q=0.5". A malformed one counts as not said. */
static void element(weights *wt, const char *s, const char *end) {
    while (s < end && ows(*s)) s++;
    const char *name = s;
    while (s < end && *s != ';' && !ows(*s)) s++;
    size_t n = (size_t)(s - name);
    while (s < end && ows(*s)) s++;
    int q = 1000;
    if (s < end) {
        if (*s++ != ';') return;
        while (s < end && ows(*s)) s++;
        if (end - s < 2 || (*s != 'q' && *s != 'Q') || s[1] != '=' || (q = qvalue(s + 2, end)) < 0) return;
    }
    int *slot = (n == 4 && !strncasecmp(name, "gzip", 4)) || (n == 6 && !strncasecmp(name, "x-gzip", 6)) ? &wt->gzip
              : n == 1 && *name == '*' ? &wt->star : n == 8 && !strncasecmp(name, "identity", 8) ? &wt->identity : NULL;
    if (slot && *slot < 0) *slot = q;   /* the first one named counts */
}

/* Every Accept-Encoding header: a list may be split over several. */
static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_ACCEPT_ENCODING) || !value) return MHD_YES;
    for (const char *s = value, *comma;; s = comma + 1) {
        comma = strchr(s, ',');
        element(cls, s, comma ? comma : s + strlen(s));
        if (!comma) return MHD_YES;
    }
}

/* gzip when its q is above 0 and no lower than identity's. Identity not
 * named (nor "*") is acceptable but least preferred. No header at all:
 * identity (RFC 9110 lets a server send any coding then, but a client
 * that says nothing, a raw socket or curl without --compressed, may not
 * inflate it). */
int web_takes_gzip(struct MHD_Connection *c) {
    weights wt = { -1, -1, -1 };
    MHD_get_connection_values(c, MHD_HEADER_KIND, each_header, &wt);
    int gz = wt.gzip >= 0 ? wt.gzip : wt.star >= 0 ? wt.star : 0;
    int id = wt.identity >= 0 ? wt.identity : wt.star >= 0 ? wt.star : 1;
    return gz > 0 && gz >= id;
}

/* ---- the bodies ---- */

/* in as one gzip member, or NULL: out of memory, or no smaller than in. */
static char *deflated(const char *in, size_t len, size_t *out_len) {
    z_stream z = { 0 };
    if (len > UINT_MAX || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    char *out = malloc(len);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)len - 1;   /* it must come out smaller, or it is not worth sending */
    int rc = out ? deflate(&z, Z_FINISH) : Z_MEM_ERROR;
    *out_len = z.total_out;
    deflateEnd(&z);
    if (rc == Z_STREAM_END) return out;
    free(out);
    return NULL;
}

static struct MHD_Response *encoded(struct MHD_Response *r, int gz, int compresses) {
    if (r && gz) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
    if (r && compresses) MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    return r;
}

struct MHD_Response *web_body(const web_req *rq, char *body, size_t len, int compresses) {
    size_t n;
    char *gz = compresses && rq->gzip && len >= MIN_GZIP ? deflated(body, len, &n) : NULL;
    if (gz) { free(body); body = gz; len = n; }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) free(body);
    return encoded(r, gz != NULL, compresses);
}

/* All of fd's size bytes, or NULL. */
static char *read_all(int fd, uint64_t size) {
    char *buf = malloc(size ? size : 1);
    for (uint64_t got = 0; buf && got < size;) {
        ssize_t k = pread(fd, buf + got, size - got, (off_t)got);
        if (k <= 0) { free(buf); return NULL; }
        got += (uint64_t)k;
    }
    return buf;
}

struct MHD_Response *web_file(const web_req *rq, int fd, uint64_t size, int compresses) {
    char *buf = compresses && rq->gzip && size >= MIN_GZIP && size <= MAX_GZIP_FILE ? read_all(fd, size) : NULL;
    if (buf) {
        close(fd);
        return web_body(rq, buf, size, compresses);
    }
    struct MHD_Response *r = MHD_create_response_from_fd(size, fd);   /* closes fd */
    if (!r) close(fd);
    return encoded(r, 0, compresses);
}
