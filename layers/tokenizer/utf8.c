/* utf8.c -- one UTF-8 character: whole, unfinished, or invalid. */
#include "layers/tokenizer/tok_internal.h"

int tok_utf8_char(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    int need;                       /* bytes in the whole character */
    unsigned char lo = 0x80, hi = 0xBF;  /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;   /* no overlong forms */
        if (c == 0xED) hi = 0x9F;   /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;   /* nothing above U+10FFFF */
    } else return -1;
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= n) return 0;
        unsigned char a = i == 1 ? lo : 0x80, b = i == 1 ? hi : 0xBF;
        if (s[i] < a || s[i] > b) return -i;
    }
    return need;
}
