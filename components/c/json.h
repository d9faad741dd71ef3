/* components/c/json.h — a small JSON DOM reader and an escaping writer for the built-in drivers.
 *
 * Reader: strict RFC 8259. Refused: trailing bytes other than whitespace, a leading UTF-8 BOM,
 * leading zeros, bad escapes, raw control characters (< 0x20) in strings, invalid UTF-8, nesting
 * deeper than 128. A lone surrogate escape (\uD800 without a low half, or a stray low half) is
 * decoded as U+FFFD, not refused: JSON.parse accepts it and the JS drivers turned it into U+FFFD at
 * the UTF-8 component boundary, so one odd character from a provider does not fail a whole reply.
 * Numbers keep their source text, so json_int is exact over int64 and jb_value writes them back as
 * written. Writer: quotes and escapes strings; invalid UTF-8 becomes U+FFFD so output is valid JSON. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;
typedef struct json_value json_value;

/* Parses n bytes (RFC 8259, UTF-8; \uXXXX escapes incl. surrogate pairs decoded to UTF-8; nesting
 * depth <= 128). NULL on error with a one-line reason and byte offset written into err. */
json_value *json_parse(const char *text, size_t n, char *err, size_t err_len);
void json_free(json_value *v);

json_type json_type_of(const json_value *v);              /* JSON_NULL for v == NULL */
const json_value *json_get(const json_value *obj, const char *key); /* NULL if absent / not object; first duplicate wins */
size_t json_count(const json_value *v);                   /* array items or object members; 0 otherwise */
const json_value *json_at(const json_value *v, size_t i); /* i-th array item or object member value */
const char *json_key_at(const json_value *obj, size_t i, size_t *len);
const char *json_string(const json_value *v, size_t *len); /* NULL unless a string; NUL-terminated copy, may contain \0 (use len) */
bool json_bool(const json_value *v);                      /* false unless true */
bool json_int(const json_value *v, int64_t *out);         /* true only for an exact integer in int64 range */
bool json_is_int(const json_value *v);

/* A growable output buffer. On allocation failure `failed` is set and later writes are ignored. */
typedef struct { char *data; size_t len, cap; bool failed; } json_buf;
void jb_raw(json_buf *b, const char *s, size_t n);
void jb_lit(json_buf *b, const char *s);                  /* strlen(s) raw bytes */
void jb_str(json_buf *b, const char *s, size_t n);        /* a quoted, escaped JSON string */
void jb_int(json_buf *b, int64_t v);
void jb_value(json_buf *b, const json_value *v);          /* re-serialise any parsed value (compact) */
void jb_free(json_buf *b);
