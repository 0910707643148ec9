/*
 * bytelevel.c -- GPT-2's ByteLevel map. Every byte gets a printable Unicode
 * character so that a vocabulary of strings can hold arbitrary bytes: the
 * printable Latin-1 bytes map to themselves, the other 68 (controls, space,
 * 0x7F-0xA0, 0xAD) to U+0100 onwards in byte order. So ' ' is 'Ġ' (U+0120),
 * '\n' is 'Ċ' (U+010A). The vocabulary is stored as bytes, so only the
 * char -> byte direction is needed here.
 */
#include "layers/tokenizer/tok_internal.h"
#include <string.h>
#include <utf8proc.h>

static int printable(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* The byte that code point cp stands for, or -1 if cp is not in the map. */
static int char_to_byte(int32_t cp) {
    if (cp < 256) return printable(cp) ? cp : -1;
    int k = cp - 256;   /* the k-th non-printable byte: 0x00-0x20, 0x7F-0xA0, 0xAD */
    if (k <= 0x20) return k;
    if (k <= 0x20 + 34) return 0x7F + k - 0x21;
    return k == 0x20 + 35 ? 0xAD : -1;
}

size_t tok_bytelevel_decode(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, n - i, &cp);
        int b = k > 0 ? char_to_byte(cp) : -1;
        if (k <= 0) k = 1;
        if (b >= 0) out[o++] = (char)b;
        else { memcpy(out + o, s + i, k); o += k; }
        i += k;
    }
    return o;
}
