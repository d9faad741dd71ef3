/* components/c/json-write.c — the escaping JSON writer declared in json.h (json_buf, jb_*). */
#include "json.h"
#include "utf8.h"
#include <stdlib.h>
#include <string.h>

void jb_raw(json_buf *b, const char *s, size_t n) {
  if (b->failed || n == 0) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) {
      if (nc > SIZE_MAX / 2) { b->failed = true; return; }
      nc *= 2;
    }
    char *nd = realloc(b->data, nc);
    if (!nd) { b->failed = true; return; }
    b->data = nd;
    b->cap = nc;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0'; /* always a C string too, for callers that log it */
}

void jb_lit(json_buf *b, const char *s) { jb_raw(b, s, strlen(s)); }

/* Escapes as JSON.stringify does (\b \f \n \r \t short forms, other controls as \u00xx), so a
 * request body matches what the JS drivers sent; invalid UTF-8 becomes U+FFFD per maximal subpart. */
void jb_str(json_buf *b, const char *str, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t run = 0; /* start of the pending run of bytes copied as they are */
  jb_raw(b, "\"", 1);
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    const char *rep = NULL;
    char u[7];
    size_t skip = 1, bad;
    if (c == '"') rep = "\\\"";
    else if (c == '\\') rep = "\\\\";
    else if (c == '\b') rep = "\\b";
    else if (c == '\f') rep = "\\f";
    else if (c == '\n') rep = "\\n";
    else if (c == '\r') rep = "\\r";
    else if (c == '\t') rep = "\\t";
    else if (c < 0x20) { memcpy(u, "\\u00", 4); u[4] = hex[c >> 4]; u[5] = hex[c & 15]; u[6] = '\0'; rep = u; }
    else if (c >= 0x80) {
      size_t len = utf8_len(s + i, n - i, &bad);
      if (len) { i += len; continue; }
      rep = "\xEF\xBF\xBD";
      skip = bad;
    } else { i++; continue; }
    jb_raw(b, str + run, i - run);
    jb_lit(b, rep);
    i += skip;
    run = i;
  }
  jb_raw(b, str + run, n - run);
  jb_raw(b, "\"", 1);
}

void jb_int(json_buf *b, int64_t v) {
  char num[24];
  int k = (int)sizeof num;
  uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do { num[--k] = (char)('0' + mag % 10); mag /= 10; } while (mag);
  if (v < 0) num[--k] = '-';
  jb_raw(b, num + k, sizeof num - (size_t)k);
}

void jb_free(json_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}
