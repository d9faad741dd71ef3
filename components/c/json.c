/* components/c/json.c — the JSON reader (a small DOM), its accessors and jb_value, declared in json.h.
 * Written for the built-in drivers: strict where a wrong answer would be silent (grammar, UTF-8,
 * depth), and lossless for numbers (kept as source text), so a provider's tool-call arguments and
 * token counts come through exactly. No libc formatting or float parsing: it stays small on wasm. */
#include "json.h"
#include "utf8.h"
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 128

typedef struct {
  char *key; /* NULL for array items */
  size_t klen;
  json_value *val;
} json_member;

struct json_value {
  json_type type;
  bool b;
  char *str;  /* JSON_STRING: the decoded bytes (NUL-terminated); JSON_NUMBER: the source text */
  size_t len;
  json_member *m; /* JSON_ARRAY / JSON_OBJECT children, in document order */
  size_t count;
};

typedef struct {
  const unsigned char *s;
  size_t n, i;
  char *err;
  size_t err_len;
  bool failed;
} reader;

/* ---------- errors ---------- */

static void put_text(char *dst, size_t cap, size_t *at, const char *s) {
  while (*s && *at + 1 < cap) dst[(*at)++] = *s++;
}

/* "json: <reason> at byte <offset>"; only the first error is kept. */
static void fail(reader *r, const char *reason) {
  if (r->failed) return;
  r->failed = true;
  if (!r->err || r->err_len == 0) return;
  size_t at = 0;
  char num[24];
  int k = (int)sizeof num - 1;
  size_t off = r->i;
  num[k] = '\0';
  do { num[--k] = (char)('0' + off % 10); off /= 10; } while (off);
  put_text(r->err, r->err_len, &at, "json: ");
  put_text(r->err, r->err_len, &at, reason);
  put_text(r->err, r->err_len, &at, " at byte ");
  put_text(r->err, r->err_len, &at, num + k);
  r->err[at] = '\0';
}

/* ---------- reader ---------- */

static json_value *parse_value(reader *r, int depth);

static void skip_ws(reader *r) {
  while (r->i < r->n) {
    unsigned char c = r->s[r->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
    r->i++;
  }
}

static json_value *new_value(reader *r, json_type t) {
  json_value *v = calloc(1, sizeof *v);
  if (!v) fail(r, "out of memory");
  else v->type = t;
  return v;
}

static bool literal(reader *r, const char *word) {
  size_t k = strlen(word);
  if (r->n - r->i < k || memcmp(r->s + r->i, word, k) != 0) { fail(r, "invalid literal"); return false; }
  r->i += k;
  return true;
}

static size_t digits(reader *r) {
  size_t start = r->i;
  while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
  return r->i - start;
}

/* number = [ "-" ] ( "0" / digit1-9 *DIGIT ) [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "+" / "-" ] 1*DIGIT ] */
static json_value *parse_number(reader *r) {
  size_t start = r->i;
  if (r->s[r->i] == '-') r->i++;
  if (r->i < r->n && r->s[r->i] == '0') {
    r->i++;
    if (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') { fail(r, "leading zero in number"); return NULL; }
  } else if (digits(r) == 0) { fail(r, "invalid number"); return NULL; }
  if (r->i < r->n && r->s[r->i] == '.') {
    r->i++;
    if (digits(r) == 0) { fail(r, "digit expected after decimal point"); return NULL; }
  }
  if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
    r->i++;
    if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-')) r->i++;
    if (digits(r) == 0) { fail(r, "digit expected in exponent"); return NULL; }
  }
  json_value *v = new_value(r, JSON_NUMBER);
  if (!v) return NULL;
  v->len = r->i - start;
  v->str = malloc(v->len + 1);
  if (!v->str) { free(v); fail(r, "out of memory"); return NULL; }
  memcpy(v->str, r->s + start, v->len);
  v->str[v->len] = '\0';
  return v;
}

static int hex4(const unsigned char *s) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    unsigned char c = s[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

/* Decodes the \u escape at r->i (just after the backslash-u) into a code point; a lone surrogate
 * half becomes U+FFFD (see json.h). Returns -1 on a malformed escape. */
static long unicode_escape(reader *r) {
  if (r->n - r->i < 4) { fail(r, "truncated \\u escape"); return -1; }
  int u = hex4(r->s + r->i);
  if (u < 0) { fail(r, "invalid \\u escape"); return -1; }
  r->i += 4;
  if (u >= 0xDC00 && u <= 0xDFFF) return 0xFFFD;
  if (u < 0xD800 || u > 0xDBFF) return u;
  if (r->n - r->i >= 6 && r->s[r->i] == '\\' && r->s[r->i + 1] == 'u') {
    int lo = hex4(r->s + r->i + 2);
    if (lo >= 0xDC00 && lo <= 0xDFFF) {
      r->i += 6;
      return 0x10000 + ((long)(u - 0xD800) << 10) + (lo - 0xDC00);
    }
  }
  return 0xFFFD; /* the next escape, if any, is read on its own */
}

/* Reads the string at r->i (on the opening quote) into a fresh NUL-terminated buffer. Decoded text
 * is never longer than its source, so one allocation of the remaining length bound suffices. */
static char *parse_string_raw(reader *r, size_t *out_len) {
  size_t start = ++r->i, end = start;
  while (end < r->n && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  unsigned char *o = malloc((end > r->n ? r->n : end) - start + 1);
  size_t k = 0;
  if (!o) { fail(r, "out of memory"); return NULL; }
  for (;;) {
    if (r->i >= r->n) { fail(r, "unterminated string"); break; }
    unsigned char c = r->s[r->i];
    if (c == '"') { r->i++; o[k] = '\0'; *out_len = k; return (char *)o; }
    if (c < 0x20) { fail(r, "control character in string"); break; }
    if (c != '\\') {
      size_t bad, len = utf8_len(r->s + r->i, r->n - r->i, &bad);
      if (!len) { fail(r, "invalid UTF-8 in string"); break; }
      memcpy(o + k, r->s + r->i, len);
      k += len; r->i += len;
      continue;
    }
    if (++r->i >= r->n) { fail(r, "unterminated string"); break; }
    c = r->s[r->i++];
    switch (c) {
      case '"': case '\\': case '/': o[k++] = c; break;
      case 'b': o[k++] = '\b'; break;
      case 'f': o[k++] = '\f'; break;
      case 'n': o[k++] = '\n'; break;
      case 'r': o[k++] = '\r'; break;
      case 't': o[k++] = '\t'; break;
      case 'u': {
        long cp = unicode_escape(r);
        if (cp < 0) goto bad;
        k += utf8_put(o + k, (uint32_t)cp); /* ≤ 4 bytes out of ≥ 6 in (U+FFFD: 3 of 6) */
        break;
      }
      default: r->i--; fail(r, "invalid escape in string"); goto bad;
    }
  }
bad:
  free(o);
  return NULL;
}

static bool push(reader *r, json_value *parent, size_t *cap, char *key, size_t klen, json_value *val) {
  if (parent->count == *cap) {
    size_t nc = *cap ? *cap * 2 : 4;
    json_member *nm = realloc(parent->m, nc * sizeof *nm);
    if (!nm) { fail(r, "out of memory"); return false; }
    parent->m = nm;
    *cap = nc;
  }
  parent->m[parent->count++] = (json_member){key, klen, val};
  return true;
}

/* Arrays and objects share one loop: `close` is ']' or '}', objects read "key": before each value. */
static json_value *parse_container(reader *r, int depth, bool object) {
  unsigned char close = object ? '}' : ']';
  if (depth >= JSON_MAX_DEPTH) { fail(r, "nesting deeper than 128"); return NULL; }
  json_value *v = new_value(r, object ? JSON_OBJECT : JSON_ARRAY);
  size_t cap = 0;
  if (!v) return NULL;
  r->i++;
  skip_ws(r);
  if (r->i < r->n && r->s[r->i] == close) { r->i++; return v; }
  for (;;) {
    char *key = NULL;
    size_t klen = 0;
    if (object) {
      skip_ws(r);
      if (r->i >= r->n || r->s[r->i] != '"') { fail(r, "object key expected"); break; }
      if (!(key = parse_string_raw(r, &klen))) break;
      skip_ws(r);
      if (r->i >= r->n || r->s[r->i] != ':') { free(key); fail(r, "':' expected"); break; }
      r->i++;
    }
    json_value *item = parse_value(r, depth + 1);
    if (!item || !push(r, v, &cap, key, klen, item)) { free(key); json_free(item); break; }
    skip_ws(r);
    if (r->i < r->n && r->s[r->i] == ',') { r->i++; continue; }
    if (r->i < r->n && r->s[r->i] == close) { r->i++; return v; }
    fail(r, object ? "',' or '}' expected" : "',' or ']' expected");
    break;
  }
  json_free(v);
  return NULL;
}

static json_value *parse_value(reader *r, int depth) {
  skip_ws(r);
  if (r->i >= r->n) { fail(r, "value expected"); return NULL; }
  json_value *v;
  switch (r->s[r->i]) {
    case '{': return parse_container(r, depth, true);
    case '[': return parse_container(r, depth, false);
    case '"':
      if (!(v = new_value(r, JSON_STRING))) return NULL;
      if (!(v->str = parse_string_raw(r, &v->len))) { free(v); return NULL; }
      return v;
    case 't': if (!literal(r, "true")) return NULL; v = new_value(r, JSON_BOOL); if (v) v->b = true; return v;
    case 'f': if (!literal(r, "false")) return NULL; return new_value(r, JSON_BOOL);
    case 'n': if (!literal(r, "null")) return NULL; return new_value(r, JSON_NULL);
    default:
      if (r->s[r->i] == '-' || (r->s[r->i] >= '0' && r->s[r->i] <= '9')) return parse_number(r);
      fail(r, "unexpected character");
      return NULL;
  }
}

json_value *json_parse(const char *text, size_t n, char *err, size_t err_len) {
  reader r = {(const unsigned char *)text, n, 0, err, err_len, false};
  if (err && err_len) err[0] = '\0';
  /* A BOM is refused (RFC 8259 §8.1: senders MUST NOT add one); nothing a provider sends has one. */
  if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) { fail(&r, "byte order mark not allowed"); return NULL; }
  json_value *v = parse_value(&r, 0);
  if (!v) return NULL;
  skip_ws(&r);
  if (r.i < n) { fail(&r, "trailing characters after the value"); json_free(v); return NULL; }
  return v;
}

void json_free(json_value *v) {
  if (!v) return;
  for (size_t k = 0; k < v->count; k++) {
    free(v->m[k].key);
    json_free(v->m[k].val);
  }
  free(v->m);
  free(v->str);
  free(v);
}

/* ---------- access ---------- */

json_type json_type_of(const json_value *v) { return v ? v->type : JSON_NULL; }

const json_value *json_get(const json_value *obj, const char *key) {
  if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
  size_t kl = strlen(key);
  for (size_t k = 0; k < obj->count; k++)
    if (obj->m[k].klen == kl && memcmp(obj->m[k].key, key, kl) == 0) return obj->m[k].val;
  return NULL;
}

size_t json_count(const json_value *v) {
  return v && (v->type == JSON_ARRAY || v->type == JSON_OBJECT) ? v->count : 0;
}

const json_value *json_at(const json_value *v, size_t i) {
  return i < json_count(v) ? v->m[i].val : NULL;
}

const char *json_key_at(const json_value *obj, size_t i, size_t *len) {
  if (!obj || obj->type != JSON_OBJECT || i >= obj->count) return NULL;
  if (len) *len = obj->m[i].klen;
  return obj->m[i].key;
}

const char *json_string(const json_value *v, size_t *len) {
  if (!v || v->type != JSON_STRING) return NULL;
  if (len) *len = v->len;
  return v->str;
}

bool json_bool(const json_value *v) { return v && v->type == JSON_BOOL && v->b; }

/* Exact: the value of the number's text, whatever its form ("12", "1.2e1", "120e-1" are all 12),
 * is an integer that fits int64. Works on the decimal digits, never through a double. */
bool json_int(const json_value *v, int64_t *out) {
  if (!v || v->type != JSON_NUMBER) return false;
  const char *s = v->str, *end = v->str + v->len;
  bool neg = *s == '-';
  if (neg) s++;
  char dig[24]; /* significant digits: leading zeros dropped, at most 19 kept (more cannot fit) */
  size_t nd = 0, trailing_zeros = 0;
  long long exp10 = 0;
  bool frac = false;
  for (; s < end && *s != 'e' && *s != 'E'; s++) {
    if (*s == '.') { frac = true; continue; }
    if (frac) exp10--;
    if (*s == '0') {
      if (nd == 0) continue;
      trailing_zeros++; /* held back: zeros only count if a non-zero digit follows */
      continue;
    }
    if (nd + trailing_zeros + 1 > 19) return false;
    while (trailing_zeros) { dig[nd++] = '0'; trailing_zeros--; }
    dig[nd++] = *s;
  }
  exp10 += (long long)trailing_zeros; /* 1200 = "12" × 10² */
  if (s < end) { /* exponent */
    bool eneg = *++s == '-';
    if (*s == '+' || *s == '-') s++;
    long long e = 0;
    for (; s < end; s++) if ((e = e * 10 + (*s - '0')) > 100000) e = 100000; /* clamp: no overflow */
    exp10 += eneg ? -e : e;
  }
  if (nd == 0) { if (out) *out = 0; return true; }
  if (exp10 < 0 || nd + exp10 > 19) return false;
  uint64_t mag = 0;
  for (size_t k = 0; k < nd; k++) mag = mag * 10 + (uint64_t)(dig[k] - '0');
  for (long long k = 0; k < exp10; k++) mag *= 10;
  /* 19 digits stay below 10^19 < 2^64: no wrap; the int64 bounds decide. */
  if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX) return false;
  if (out) *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  return true;
}

bool json_is_int(const json_value *v) { return json_int(v, NULL); }

/* The writer's one use of the DOM's layout (numbers as their source text); the rest of the
 * writer is in json-write.c. */
void jb_value(json_buf *b, const json_value *v) {
  if (!v) { jb_lit(b, "null"); return; }
  switch (v->type) {
    case JSON_NULL: jb_lit(b, "null"); return;
    case JSON_BOOL: jb_lit(b, v->b ? "true" : "false"); return;
    case JSON_NUMBER: jb_raw(b, v->str, v->len); return;
    case JSON_STRING: jb_str(b, v->str, v->len); return;
    case JSON_ARRAY:
    case JSON_OBJECT:
      jb_raw(b, v->type == JSON_ARRAY ? "[" : "{", 1);
      for (size_t k = 0; k < v->count; k++) {
        if (k) jb_raw(b, ",", 1);
        if (v->type == JSON_OBJECT) { jb_str(b, v->m[k].key, v->m[k].klen); jb_raw(b, ":", 1); }
        jb_value(b, v->m[k].val);
      }
      jb_raw(b, v->type == JSON_ARRAY ? "]" : "}", 1);
      return;
  }
}
