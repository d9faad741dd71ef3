/* components/c/utf8.c — UTF-8 validation and encoding shared by the JSON reader and writer. */
#include "utf8.h"

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if invalid; *bad gets the length of
 * the maximal invalid subpart (Unicode §3.9, what TextDecoder replaces with one U+FFFD). Overlongs,
 * encoded surrogates and code points above U+10FFFF are invalid. */
size_t utf8_len(const unsigned char *s, size_t n, size_t *bad) {
  unsigned char c = s[0];
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
  *bad = 1;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c >= 0xE0 && c <= 0xEF) { need = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
  else if (c >= 0xF0 && c <= 0xF4) { need = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
  else return 0;
  for (size_t k = 1; k < need; k++) {
    if (k >= n) return 0;
    unsigned char lo_k = k == 1 ? lo : 0x80, hi_k = k == 1 ? hi : 0xBF;
    if (s[k] < lo_k || s[k] > hi_k) return 0;
    *bad = k + 1;
  }
  return need;
}

size_t utf8_put(unsigned char *o, uint32_t cp) {
  if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
  if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12); o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F)); return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18); o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)); o[3] = (unsigned char)(0x80 | (cp & 0x3F)); return 4;
}
