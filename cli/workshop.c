/*
 * workshop.c -- what `hipath serve --workshop` adds on the command line:
 * the teacher's key, and the addresses a room can reach the server at,
 * the join code and the teacher's URL, printed (docs/workshop.md).
 */
#include "cli/cli.h"
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int cli_workshop_key(char *out, int cap) {
    unsigned char b[16];
    if (cap < 33 || getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) return -1;
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* The IPv4 addresses of the interfaces that are up, loopback last. */
static int addresses(const char *host, char out[][INET_ADDRSTRLEN], int max) {
    int n = 0;
    if (strcmp(host, "0.0.0.0")) {   /* one address asked for: that one */
        snprintf(out[n++], INET_ADDRSTRLEN, "%s", host);
        return n;
    }
    struct ifaddrs *ifs = NULL;
    for (int loop = 0; loop < 2; loop++) {
        if (!ifs && getifaddrs(&ifs)) break;
        for (struct ifaddrs *i = ifs; i && n < max; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK) == !loop)
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out[n++], INET_ADDRSTRLEN);
    }
    freeifaddrs(ifs);
    if (!n) snprintf(out[n++], INET_ADDRSTRLEN, "127.0.0.1");
    return n;
}

void cli_workshop_print(const char *host, int port, const char *code, const char *teacher_key, const web_opts *wo) {
    char a[16][INET_ADDRSTRLEN];
    int n = addresses(host, a, 16);
    fprintf(stderr, "hipath: workshop: students open one of");
    for (int i = 0; i < n; i++) fprintf(stderr, " http://%s:%d/join", a[i], port);
    fprintf(stderr, "\nhipath: workshop: join code %s (%d students at most, %d an address; each %d requests a minute, "
                    "a prompt of %d tokens and a reply of %d%s)\n", code, wo->workshop_students, wo->workshop_seats, wo->workshop_rate,
            wo->workshop_max_prompt_tokens, wo->workshop_max_tokens,
            wo->workshop_rate && wo->workshop_max_tokens && wo->workshop_max_prompt_tokens && wo->workshop_seats ? "" : "; 0: no limit");
    fprintf(stderr, "hipath: workshop: teacher's page (keep its key to yourself) http://%s:%d/teacher#key=%s\n", a[0], port, teacher_key);
}
