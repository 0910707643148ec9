/*
 * copy.h -- shared vocabulary: which way a copy moves bytes between the
 * host and the device (layer 5 asks for copies, layer 2 makes them, layer
 * 1 models how long they take).
 */
#ifndef HIPATH_COPY_H
#define HIPATH_COPY_H

enum copy_dir { COPY_H2D, COPY_D2H, COPY_D2D };

static inline const char *copy_dir_name(enum copy_dir d) { return d == COPY_H2D ? "H2D" : d == COPY_D2H ? "D2H" : "D2D"; }

#endif
