/*
 * trace_perfetto.c -- the Perfetto sink: a .pftrace file of TracePackets
 * (trace/perfetto_trace.proto, with Perfetto's own field numbers).
 *
 * protobuf-c packs each packet as a one-packet Trace, i.e. as field 1,
 * length-delimited; concatenated, such messages are one Trace. Packets are
 * packed into a buffer that is written out when full and at every flush,
 * always whole packets per write, so a killed process leaves a readable
 * prefix (stdio would split a packet across two writes).
 *
 * Tracks: a process track "hipath"; under it one track per layer, client on
 * top, GPU at the bottom. The engine's (and any unnamed thread's) events go
 * on the layer's own track; a named thread (trace_thread_name: an HTTP
 * connection, a lab's client) has a child track of its name under each layer
 * it records on, since Perfetto nests slices per track and two threads'
 * slices would not nest. A GPU stream is a child track of layer 1 that holds
 * every thread's work on the device, in order. Counters are children too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/perfetto_trace.pb-c.h"
#include "trace/trace_sink.h"

#define SEQ_ID       1
#define PROCESS_UUID 1
#define NTRACKS      4096   /* open-addressing table of known tracks */
#define NAME_LEN     96
#define OUT_BYTES    (1u << 20)  /* packets waiting to be written */
#define NINTERN      4096   /* open-addressing table of interned strings */
#define MAX_NEW      (TRACE_MAX_ARGS + 4)  /* strings a packet can intern, per kind */

typedef Perfetto__Protos__TracePacket     packet;
typedef Perfetto__Protos__TrackDescriptor descriptor;
typedef Perfetto__Protos__TrackEvent      track_event;
typedef Perfetto__Protos__DebugAnnotation annotation;

/* Interning: a string that repeats (event names, categories, annotation
 * keys, the direction and clock values) goes into the file once, in the
 * interned_data of the first packet that uses it, and is then referred to
 * by a small iid: a third of the file's size, and of the packing work. */
enum { IN_NAME, IN_CATEGORY, IN_KEY, IN_VALUE, NKINDS };   /* separate iid spaces */
typedef struct {
    uint64_t iid;           /* 0: free slot */
    int kind;
    const char *literal;    /* the string literal it was interned by */
    char s[NAME_LEN];
} interned;

/* What one packet interns first. */
typedef struct {
    int n[NKINDS];
    uint64_t iid[NKINDS][MAX_NEW];
    const char *s[NKINDS][MAX_NEW];
} new_strings;

typedef struct {
    uint64_t uuid;          /* 0: free slot */
    int owner;              /* thread whose slices go here; -1: none yet */
    int emitted;            /* descriptor written */
    char name[NAME_LEN];
} track;

struct tpf {
    int fd;
    uint8_t *out;           /* whole packets not yet written */
    size_t nout, cap;
    off_t size;             /* bytes in the file: whole packets */
    int failed;             /* errno of a failed write or allocation */
    track tracks[NTRACKS];
    struct { char name[NAME_LEN]; unsigned gen; } threads[TRACE_MAX_THREADS];   /* a reused index: a new gen */
    interned strings[NINTERN];
    uint64_t next_iid[NKINDS];
};

static uint64_t layer_uuid(int layer) { return PROCESS_UUID + (uint64_t)layer; }

/* Hashed uuids have the top bit set, so they never meet the small ones. */
static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t z = a * 0x9E3779B97F4A7C15ull + b;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | (1ull << 63);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* The iid of s, interning it (into ns, for this packet) when new; 0 if it
 * cannot be interned (too long, table full, packet full): write it out.
 * What is interned (event names, arg keys, categories, the direction and
 * clock values) is string literals (trace.h asks for that), so a string is
 * found by its address, without hashing or comparing it. */
static uint64_t intern(tpf *pf, new_strings *ns, int kind, const char *s) {
    uint64_t h = mix(kind, (uintptr_t)s);
    for (size_t k = 0, i = h % NINTERN; k < NINTERN; k++, i = (i + 1) % NINTERN) {
        interned *e = &pf->strings[i];
        if (e->iid && e->kind == kind && e->literal == s)
            return e->iid;
        if (e->iid) continue;
        if (ns->n[kind] == MAX_NEW || strlen(s) >= NAME_LEN) return 0;
        e->iid = ++pf->next_iid[kind];
        e->kind = kind;
        e->literal = s;
        strcpy(e->s, s);
        ns->iid[kind][ns->n[kind]] = e->iid;
        ns->s[kind][ns->n[kind]++] = e->s;
        return e->iid;
    }
    return 0;
}

static track *find(tpf *pf, uint64_t uuid) {
    for (size_t k = 0, i = uuid % NTRACKS; k < NTRACKS; k++, i = (i + 1) % NTRACKS) {
        track *t = &pf->tracks[i];
        if (t->uuid == uuid) return t;
        if (t->uuid == 0) { t->uuid = uuid; t->owner = -1; return t; }
    }
    return NULL;
}

/* A write that fails part-way (disk full) is cut back off the file, so the
 * file stays whole packets; those packets are lost and the flush says so. */
static void write_out(tpf *pf) {
    size_t done = 0;
    while (done < pf->nout) {
        ssize_t k = write(pf->fd, pf->out + done, pf->nout - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { pf->failed = k < 0 ? errno : EIO; break; }
        done += k;
    }
    if (done == pf->nout) pf->size += done;
    else if (ftruncate(pf->fd, pf->size) || lseek(pf->fd, pf->size, SEEK_SET) < 0) pf->failed = errno;
    pf->nout = 0;
}

static void write_packet(tpf *pf, packet *p) {
    p->optional_trusted_packet_sequence_id_case =
        PERFETTO__PROTOS__TRACE_PACKET__OPTIONAL_TRUSTED_PACKET_SEQUENCE_ID_TRUSTED_PACKET_SEQUENCE_ID;
    p->trusted_packet_sequence_id = SEQ_ID;
    Perfetto__Protos__Trace trace = PERFETTO__PROTOS__TRACE__INIT;
    trace.n_packet = 1;
    trace.packet = &p;
    size_t n = perfetto__protos__trace__get_packed_size(&trace);
    if (pf->nout + n > pf->cap) write_out(pf);
    if (n > pf->cap) {
        uint8_t *b = realloc(pf->out, n);
        if (!b) { pf->failed = ENOMEM; return; }
        pf->out = b;
        pf->cap = n;
    }
    perfetto__protos__trace__pack(&trace, pf->out + pf->nout);
    pf->nout += n;
}

static void describe(tpf *pf, track *t, uint64_t parent, int rank, int counter) {
    descriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    Perfetto__Protos__CounterDescriptor c = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
    d.has_uuid = 1;
    d.uuid = t->uuid;
    d.has_parent_uuid = 1;
    d.parent_uuid = parent;
    d.name = t->name;
    d.has_sibling_order_rank = 1;
    d.sibling_order_rank = rank;
    d.has_child_ordering = 1;
    d.child_ordering = PERFETTO__PROTOS__TRACK_DESCRIPTOR__CHILD_TRACKS_ORDERING__EXPLICIT;
    if (counter) d.counter = &c;
    packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
    p.track_descriptor = &d;
    write_packet(pf, &p);
    t->emitted = 1;
}

tpf *tpf_open(const char *path, char *err, int errlen) {
    tpf *pf = calloc(1, sizeof *pf);
    if (pf) pf->out = malloc(pf->cap = OUT_BYTES);
    if (!pf || !pf->out || (pf->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(pf && pf->out ? errno : ENOMEM));
        if (pf) free(pf->out);
        free(pf);
        return NULL;
    }
    /* First packet: the process track; it starts the sequence. */
    Perfetto__Protos__ProcessDescriptor proc = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
    proc.has_pid = 1;
    proc.pid = getpid();
    proc.process_name = "hipath";
    descriptor d = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    d.has_uuid = 1;
    d.uuid = PROCESS_UUID;
    d.process = &proc;
    d.has_child_ordering = 1;
    d.child_ordering = PERFETTO__PROTOS__TRACK_DESCRIPTOR__CHILD_TRACKS_ORDERING__EXPLICIT;
    packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.has_sequence_flags = 1;
    p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
    p.has_incremental_state_cleared = 1;
    p.incremental_state_cleared = 1;
    p.has_first_packet_on_sequence = 1;
    p.first_packet_on_sequence = 1;
    p.has_previous_packet_dropped = 1;
    p.previous_packet_dropped = 1;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
    p.track_descriptor = &d;
    write_packet(pf, &p);
    /* All eight layers, client (rank 0) down to GPU (rank 7). */
    for (int layer = L_CLIENT; layer >= L_GPU; layer--) {
        track *t = find(pf, layer_uuid(layer));
        snprintf(t->name, NAME_LEN, "%d %s", layer, trace_layer_name(layer));
        describe(pf, t, PROCESS_UUID, L_CLIENT - layer, 0);
    }
    return pf;
}

/* "GPU 1/stream 0": a '/' in a child track's name puts it under a group
 * track named for the part before it (a lane group per GPU), and the track
 * keeps the part after. A group ranks as the first track that named it. */
static uint64_t group_of(tpf *pf, int layer, char *name, int rank) {
    char *slash = strchr(name, '/');
    if (!slash) return layer_uuid(layer);
    *slash = 0;
    track *g = find(pf, mix(layer_uuid(layer), fnv1a(name)));
    if (g && !g->emitted) {
        snprintf(g->name, NAME_LEN, "%s", name);
        describe(pf, g, layer_uuid(layer), rank, 0);
    }
    memmove(name, slash + 1, strlen(slash + 1) + 1);
    return g ? g->uuid : layer_uuid(layer);
}

/* The track of (layer, track) this thread's slices go to. */
static uint64_t slice_track(tpf *pf, const trace_event *e) {
    int layer = e->w.layer;
    track *t = find(pf, e->w.track ? mix(layer, (uint32_t)e->w.track) : layer_uuid(layer));
    if (!t) return layer_uuid(layer);
    if (!t->emitted) {
        if (!t->name[0]) snprintf(t->name, NAME_LEN, "%s %d", trace_layer_name(layer), e->w.track);
        describe(pf, t, group_of(pf, layer, t->name, e->w.track), e->w.track, 0);
    }
    if (layer == L_GPU && e->w.track) return t->uuid;   /* a stream: the device's timeline */
    const char *named = pf->threads[e->thread].name;
    if (!named[0]) {
        if (t->owner < 0) t->owner = e->thread;
        if (t->owner == e->thread) return t->uuid;
    }
    /* a named thread, or a second unnamed one: a child track of its own */
    track *v = find(pf, mix(t->uuid, (uint64_t)e->thread << 32 | pf->threads[e->thread].gen));
    if (!v) return t->uuid;
    if (!v->emitted) {
        if (named[0]) snprintf(v->name, NAME_LEN, "%s", named);
        else snprintf(v->name, NAME_LEN, "%.60s (thread %d)", t->name, e->thread);
        describe(pf, v, t->uuid, 1000000 + e->thread, 0);
    }
    return v->uuid;
}

static uint64_t counter_track(tpf *pf, const trace_event *e) {
    track *t = find(pf, mix(mix(e->w.layer, (uint32_t)e->w.track), fnv1a(e->name)));
    if (!t) return 0;
    if (!t->emitted) {
        snprintf(t->name, NAME_LEN, "%s", e->name);
        describe(pf, t, group_of(pf, e->w.layer, t->name, e->w.track), 2000000, 1);
    }
    return t->uuid;
}

/* One event's packet in the making: its annotations and what it interns. */
typedef struct {
    annotation ann[TRACE_MAX_ARGS + 4], *annp[TRACE_MAX_ARGS + 4];
    int n;
    new_strings ns;
} builder;

static annotation *annotate(tpf *pf, builder *b, const char *key) {
    annotation *a = &b->ann[b->n];
    b->annp[b->n++] = a;
    perfetto__protos__debug_annotation__init(a);
    key = key ? key : "";
    if ((a->name_iid = intern(pf, &b->ns, IN_KEY, key)))
        a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
    else {
        a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME;
        a->name = (char *)key;
    }
    return a;
}

static void annotate_int(tpf *pf, builder *b, const char *key, int64_t v) {
    annotation *a = annotate(pf, b, key);
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
    a->int_value = v;
}

static void annotate_double(tpf *pf, builder *b, const char *key, double v) {
    annotation *a = annotate(pf, b, key);
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
    a->double_value = v;
}

/* interned: v is a string literal, one of a few values on every event */
static void annotate_str(tpf *pf, builder *b, const char *key, const char *v, int interned) {
    annotation *a = annotate(pf, b, key);
    if (interned && (a->string_value_iid = intern(pf, &b->ns, IN_VALUE, v)))
        a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
    else {
        a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
        a->string_value = (char *)v;
    }
}

/* The packet, with the strings it interns first. Every track event packet
 * may use iids, so each says it needs the sequence's interned state. */
static void emit(tpf *pf, uint64_t ts, track_event *te, const new_strings *ns) {
    Perfetto__Protos__EventName names[MAX_NEW], *pnames[MAX_NEW];
    Perfetto__Protos__EventCategory cats[MAX_NEW], *pcats[MAX_NEW];
    Perfetto__Protos__DebugAnnotationName keys[MAX_NEW], *pkeys[MAX_NEW];
    Perfetto__Protos__InternedString vals[MAX_NEW], *pvals[MAX_NEW];
    Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
    for (int i = 0; ns && i < ns->n[IN_NAME]; i++) {
        perfetto__protos__event_name__init(pnames[i] = &names[i]);
        names[i].has_iid = 1, names[i].iid = ns->iid[IN_NAME][i], names[i].name = (char *)ns->s[IN_NAME][i];
    }
    for (int i = 0; ns && i < ns->n[IN_CATEGORY]; i++) {
        perfetto__protos__event_category__init(pcats[i] = &cats[i]);
        cats[i].has_iid = 1, cats[i].iid = ns->iid[IN_CATEGORY][i], cats[i].name = (char *)ns->s[IN_CATEGORY][i];
    }
    for (int i = 0; ns && i < ns->n[IN_KEY]; i++) {
        perfetto__protos__debug_annotation_name__init(pkeys[i] = &keys[i]);
        keys[i].has_iid = 1, keys[i].iid = ns->iid[IN_KEY][i], keys[i].name = (char *)ns->s[IN_KEY][i];
    }
    for (int i = 0; ns && i < ns->n[IN_VALUE]; i++) {
        perfetto__protos__interned_string__init(pvals[i] = &vals[i]);
        vals[i].has_iid = 1, vals[i].iid = ns->iid[IN_VALUE][i];
        vals[i].has_str = 1, vals[i].str.data = (uint8_t *)ns->s[IN_VALUE][i], vals[i].str.len = strlen(ns->s[IN_VALUE][i]);
    }
    packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    if (ns && (ns->n[IN_NAME] || ns->n[IN_CATEGORY] || ns->n[IN_KEY] || ns->n[IN_VALUE])) {
        in.n_event_names = ns->n[IN_NAME], in.event_names = pnames;
        in.n_event_categories = ns->n[IN_CATEGORY], in.event_categories = pcats;
        in.n_debug_annotation_names = ns->n[IN_KEY], in.debug_annotation_names = pkeys;
        in.n_debug_annotation_string_values = ns->n[IN_VALUE], in.debug_annotation_string_values = pvals;
        p.interned_data = &in;
    }
    p.has_sequence_flags = 1;
    p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
    p.has_timestamp = 1;
    p.timestamp = ts;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
    p.track_event = te;
    write_packet(pf, &p);
}

/* Names a child track; only a track not yet written out can be named. */
static void name_track(tpf *pf, const trace_event *e) {
    int layer = e->w.layer;
    track *t = find(pf, e->w.track ? mix(layer, (uint32_t)e->w.track) : layer_uuid(layer));
    if (t && !t->emitted) snprintf(t->name, NAME_LEN, "%s", e->name);
}

void tpf_event(tpf *pf, const trace_event *e) {
    if (e->kind == EV_TRACK) { name_track(pf, e); return; }
    if (e->kind == EV_THREAD) {
        snprintf(pf->threads[e->thread].name, NAME_LEN, "%s", e->name);
        pf->threads[e->thread].gen++;
        return;
    }
    track_event te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    builder b;
    b.n = 0;
    memset(&b.ns.n, 0, sizeof b.ns.n);
    te.has_type = 1;
    te.has_track_uuid = 1;
    if (e->kind == EV_COUNTER) {
        if (!(te.track_uuid = counter_track(pf, e))) return;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        te.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
        te.double_counter_value = e->value;
        emit(pf, e->ts, &te, NULL);
        return;
    }
    te.track_uuid = slice_track(pf, e);
    te.type = e->kind == EV_END     ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END
            : e->kind == EV_INSTANT ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT
                                    : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
    char *category = (char *)trace_layer_name(e->w.layer);
    uint64_t category_iid;
    if (e->kind != EV_END) {
        if ((te.name_iid = intern(pf, &b.ns, IN_NAME, e->name)))
            te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        else {
            te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
            te.name = (char *)e->name;
        }
        if ((category_iid = intern(pf, &b.ns, IN_CATEGORY, category))) {
            te.n_category_iids = 1;
            te.category_iids = &category_iid;
        } else {
            te.n_categories = 1;
            te.categories = &category;
        }
        annotate_str(pf, &b, "direction", trace_dir_name(e->w.dir), 1);
        annotate_str(pf, &b, "clock", trace_clock_name(e->modeled_ns ? TRACE_MIXED : e->w.clock), 1);
        if (e->w.req >= 0) annotate_int(pf, &b, "request", e->w.req);
        if (e->w.step >= 0) annotate_int(pf, &b, "step", e->w.step);
    }
    if (e->modeled_ns && (e->kind == EV_BEGIN || !e->stored)) {   /* mixed: said once, at the begin if it knew */
        if (e->kind == EV_END) annotate_str(pf, &b, "clock", trace_clock_name(TRACE_MIXED), 1);
        annotate_int(pf, &b, "modeled_ns", (int64_t)e->modeled_ns);
    }
    for (int i = 0; i < e->nargs; i++) {
        const trace_arg *a = &e->args[i];
        if (a->type == ARG_DOUBLE) annotate_double(pf, &b, a->key, a->d);
        else if (a->type == ARG_STR) annotate_str(pf, &b, a->key, a->s, 0);
        else annotate_int(pf, &b, a->key, a->i);
    }
    te.n_debug_annotations = b.n;
    te.debug_annotations = b.annp;
    te.n_flow_ids = e->nout;
    te.flow_ids = (uint64_t *)e->out;
    te.n_terminating_flow_ids = e->nin;
    te.terminating_flow_ids = (uint64_t *)e->in;
    emit(pf, e->ts, &te, &b.ns);
    if (e->kind == EV_SLICE) {
        track_event end = PERFETTO__PROTOS__TRACK_EVENT__INIT;
        end.has_type = 1;
        end.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        end.has_track_uuid = 1;
        end.track_uuid = te.track_uuid;
        emit(pf, e->ts + e->dur, &end, NULL);
    }
}

int tpf_commit(tpf *pf, char *err, int errlen) {
    write_out(pf);
    if (!pf->failed) return 0;
    if (err && errlen > 0) snprintf(err, errlen, "perfetto trace: write failed: %s", strerror(pf->failed));
    pf->failed = 0;
    return -1;
}

int tpf_close(tpf *pf, char *err, int errlen) {
    int rc = tpf_commit(pf, err, errlen);
    if (close(pf->fd) != 0 && rc == 0) {
        if (err && errlen > 0) snprintf(err, errlen, "perfetto trace: close: %s", strerror(errno));
        rc = -1;
    }
    free(pf->out);
    free(pf);
    return rc;
}
