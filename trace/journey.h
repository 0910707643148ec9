/*
 * journey.h -- the journey table `hipath run` prints: each layer, down and
 * up, what it did to the data, and its share of the request's time.
 *
 * Time is split by the deepest layer at work: at every instant of the
 * request, the layer with the lowest number that has a slice open owns the
 * time (the client owns what no other layer covers: the network and the
 * wait). The rows therefore add up to the request's total, which is the
 * client's request slice: on a simulated device, host time (measured) and
 * the device's (modeled) on one virtual timeline, each row saying which.
 */
#ifndef HIPATH_JOURNEY_H
#define HIPATH_JOURNEY_H

#include <stdint.h>

typedef struct {
    int layer, dir;            /* enum trace_layer, DIR_DOWN / DIR_UP */
    double self_s;             /* time this layer was the deepest at work */
    int clock;                 /* of that time: TRACE_MODELED for a simulated GPU's layer 1, else measured */
    char what[256];            /* what happened to the data */
} journey_row;

/* Read run `run_id`'s first request back from the SQLite trace at db.
 * Fills up to 16 rows (8 layers down, then 8 up) and the request's total
 * time. 0, or -1 with a reason. */
int trace_journey(const char *db, int64_t run_id, journey_row rows[16], int *n, double *total_s,
                  char *err, int errlen);
/* The same for request `request` of the run (0: its first): its own client
 * request slice is the window, and only the window's events that are that
 * request's or no request's (an engine step, an op) count. */
int trace_journey_request(const char *db, int64_t run_id, int64_t request, journey_row rows[16], int *n,
                          double *total_s, char *err, int errlen);

#endif
