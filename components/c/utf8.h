/* components/c/utf8.h — UTF-8 helpers shared by json.c (reader) and json-write.c (writer). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if invalid; *bad gets the length of
 * the maximal invalid subpart (Unicode §3.9, what TextDecoder replaces with one U+FFFD). Overlongs,
 * encoded surrogates and code points above U+10FFFF are invalid. n must be at least 1. */
size_t utf8_len(const unsigned char *s, size_t n, size_t *bad);

/* Writes code point cp (at most U+10FFFF) as UTF-8 into o; returns the byte count (1..4). */
size_t utf8_put(unsigned char *o, uint32_t cp);
