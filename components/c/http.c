/* components/c/http.c — the provider call over wasi:http with retries (http.h says what is retried). */
#include "http.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bindings.h"

#define RETRY_CAP_MS 30000.0
#define READ_CHUNK 65536
#define WRITE_CHUNK 4096 /* blocking-write-and-flush takes at most 4096 bytes a call */
/* An error answer's body: the first characters are kept (a UTF-16 unit is at most 4 UTF-8 bytes),
 * the rest only counted, so a provider's 200 kB error page costs no memory. */
#define ERROR_KEEP_BYTES (4 * (HTTP_ERROR_TEXT_MAX + 1))

/* ------------------------------------------------------------------------------------- text */

/* UTF-16 units a UTF-8 byte starts (JS string lengths): 0 for a continuation byte. */
static size_t units_of_byte(unsigned char c) {
  if ((c & 0xC0) == 0x80) return 0;
  return c >= 0xF0 ? 2 : 1;
}

static size_t utf16_units(const char *s, size_t n) {
  size_t u = 0;
  for (size_t i = 0; i < n; i++) u += units_of_byte((unsigned char)s[i]);
  return u;
}

/* cut() of a text of which `kept` (n bytes) is the start and `total` its length in UTF-16 units. */
static void cut_counted(json_buf *out, const char *kept, size_t n, size_t total) {
  if (total <= HTTP_ERROR_TEXT_MAX) {
    jb_raw(out, kept, n);
    return;
  }
  size_t units = 0, i = 0;
  while (i < n) {
    size_t len = 1;
    unsigned char c = (unsigned char)kept[i];
    if (c >= 0xF0) len = 4;
    else if (c >= 0xE0) len = 3;
    else if (c >= 0xC0) len = 2;
    size_t u = units_of_byte(c);
    if (units + u > HTTP_ERROR_TEXT_MAX || i + len > n) break;
    units += u;
    i += len;
  }
  jb_raw(out, kept, i);
  char tail[64];
  snprintf(tail, sizeof tail, "\xE2\x80\xA6 (%zu more characters cut)", total - HTTP_ERROR_TEXT_MAX);
  jb_lit(out, tail);
}

void http_cut(json_buf *out, const char *s, size_t n) { cut_counted(out, s, n, utf16_units(s, n)); }

/* ------------------------------------------------------------------------------------ clocks */

void http_sleep_ms(uint64_t ms) {
  if (ms == 0) return;
  wasi_clocks_monotonic_clock_own_pollable_t p = wasi_clocks_monotonic_clock_subscribe_duration(ms * 1000000ull);
  wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(p));
  wasi_io_poll_pollable_drop_own(p);
}

/* A uniform number in [0, 1) from wasi-libc's getentropy (wasi:random through the adapter). */
static double random_unit(void) {
  uint64_t r = 0;
  if (getentropy(&r, sizeof r) != 0) return 0.5;
  return (double)(r >> 11) * 0x1.0p-53;
}

/* ---------------------------------------------------------------------------------- retry-after */

static int month_of(const char *m) {
  static const char *names = "JanFebMarAprMayJunJulAugSepOctNovDec";
  for (int i = 0; i < 12; i++)
    if (strncmp(names + 3 * i, m, 3) == 0) return i + 1;
  return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = (unsigned)(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

/* An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms) as Unix
 * milliseconds; false when it is none. */
static bool http_date_ms(const char *v, double *out) {
  char wd[16], mon[4];
  int d, y, h, mi, s;
  if (sscanf(v, "%15[A-Za-z], %d %3s %d %d:%d:%d GMT", wd, &d, mon, &y, &h, &mi, &s) == 7) {
  } else if (sscanf(v, "%15[A-Za-z], %d-%3s-%d %d:%d:%d GMT", wd, &d, mon, &y, &h, &mi, &s) == 7) {
    y += y < 50 ? 2000 : y < 100 ? 1900 : 0;
  } else if (sscanf(v, "%15[A-Za-z] %3s %d %d:%d:%d %d", wd, mon, &d, &h, &mi, &s, &y) == 7) {
  } else {
    return false;
  }
  int m = month_of(mon);
  if (!m || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  *out = ((double)days_from_civil(y, (unsigned)m, (unsigned)d) * 86400.0 + h * 3600.0 + mi * 60.0 + s) * 1000.0;
  return true;
}

/* Retry-After as milliseconds from now: delta-seconds or an HTTP-date; -1 when absent or unreadable. */
static double retry_after_ms(const char *v) {
  if (!v) return -1;
  while (*v == ' ' || *v == '\t') v++;
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n == 0) return -1;
  bool digits = true;
  for (size_t i = 0; i < n; i++) digits = digits && v[i] >= '0' && v[i] <= '9';
  if (digits) return strtod(v, NULL) * 1000.0;
  double t;
  if (!http_date_ms(v, &t)) return -1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double ms = t - ((double)now.tv_sec * 1000.0 + (double)(now.tv_nsec / 1000000));
  return ms > 0 ? ms : 0;
}

static double backoff_ms(http_retry r, int attempt, double retry_after) {
  if (retry_after >= 0) return retry_after < RETRY_CAP_MS ? retry_after : RETRY_CAP_MS;
  double top = fmin(r.retry_base_ms * pow(2, attempt - 1), RETRY_CAP_MS);
  return floor(top / 2 + random_unit() * (top / 2) + 0.5);
}

static bool number_of(const json_value *v, double *out) {
  if (json_type_of(v) != JSON_NUMBER) return false;
  json_buf b = {0};
  jb_value(&b, v);
  jb_raw(&b, "", 1);
  bool ok = !b.failed && b.data;
  if (ok) *out = strtod(b.data, NULL);
  jb_free(&b);
  return ok && isfinite(*out);
}

http_retry http_retry_of(const json_value *config) {
  http_retry r = {3, 500};
  int64_t n;
  if (json_int(json_get(config, "max_attempts"), &n) && n >= 1) r.max_attempts = n > 1000000 ? 1000000 : (int)n;
  double base;
  if (number_of(json_get(config, "retry_base_ms"), &base)) r.retry_base_ms = base;
  return r;
}

/* ----------------------------------------------------------------------------------- wasi:http */

static const char *const ERROR_CODES[] = {
  "DNS-timeout", "DNS-error", "destination-not-found", "destination-unavailable", "destination-IP-prohibited",
  "destination-IP-unroutable", "connection-refused", "connection-terminated", "connection-timeout",
  "connection-read-timeout", "connection-write-timeout", "connection-limit-reached", "TLS-protocol-error",
  "TLS-certificate-error", "TLS-alert-received", "HTTP-request-denied", "HTTP-request-length-required",
  "HTTP-request-body-size", "HTTP-request-method-invalid", "HTTP-request-URI-invalid", "HTTP-request-URI-too-long",
  "HTTP-request-header-section-size", "HTTP-request-header-size", "HTTP-request-trailer-section-size",
  "HTTP-request-trailer-size", "HTTP-response-incomplete", "HTTP-response-header-section-size",
  "HTTP-response-header-size", "HTTP-response-body-size", "HTTP-response-trailer-section-size",
  "HTTP-response-trailer-size", "HTTP-response-transfer-coding", "HTTP-response-content-coding",
  "HTTP-response-timeout", "HTTP-upgrade-failed", "HTTP-protocol-error", "loop-detected", "configuration-error",
  "internal-error",
};

/* The error-code's name, and the internal error's text when it has one; frees the code. */
static void describe_error(json_buf *out, wasi_http_types_error_code_t *e) {
  jb_lit(out, e->tag < sizeof ERROR_CODES / sizeof *ERROR_CODES ? ERROR_CODES[e->tag] : "unknown-error");
  if (e->tag == WASI_HTTP_TYPES_ERROR_CODE_INTERNAL_ERROR && e->val.internal_error.is_some) {
    jb_lit(out, ": ");
    jb_raw(out, (const char *)e->val.internal_error.val.ptr, e->val.internal_error.val.len);
  }
  wasi_http_types_error_code_free(e);
}

typedef struct {
  bool https;
  bindings_string_t authority, path;
} target;

static bool parse_url(const char *url, target *t) {
  const char *rest;
  if (strncmp(url, "http://", 7) == 0) t->https = false, rest = url + 7;
  else if (strncmp(url, "https://", 8) == 0) t->https = true, rest = url + 8;
  else return false;
  const char *slash = strchr(rest, '/');
  size_t alen = slash ? (size_t)(slash - rest) : strlen(rest);
  if (alen == 0) return false;
  bindings_string_dup_n(&t->authority, rest, alen);
  bindings_string_dup(&t->path, slash ? slash : "/");
  return true;
}

typedef enum { ATTEMPT_OK, ATTEMPT_STATUS, ATTEMPT_CONNECTION } attempt_kind;

typedef struct {
  attempt_kind kind;
  int status;
  json_buf error;     /* connection: the reason; status: the body's start */
  size_t error_units; /* status: the body's whole length in UTF-16 units */
  double retry_after; /* status: ms, -1 when none */
  char *content_type;
  bool body_broken;
} attempt;

static char *header_value(wasi_http_types_own_headers_t h, const char *name) {
  wasi_http_types_field_name_t key;
  bindings_string_set(&key, name);
  wasi_http_types_list_field_value_t vals;
  wasi_http_types_method_fields_get(wasi_http_types_borrow_fields(h), &key, &vals);
  char *out = NULL;
  if (vals.len > 0) {
    out = malloc(vals.ptr[0].len + 1);
    if (out) {
      memcpy(out, vals.ptr[0].ptr, vals.ptr[0].len);
      out[vals.ptr[0].len] = 0;
    }
  }
  wasi_http_types_list_field_value_free(&vals);
  return out;
}

static wasi_http_types_own_outgoing_request_t *build_request(const target *t, const http_header *hs, size_t nh, json_buf *why,
                                                             wasi_http_types_own_outgoing_request_t *req) {
  wasi_http_types_tuple2_field_name_field_value_t *entries = calloc(nh ? nh : 1, sizeof *entries);
  for (size_t i = 0; i < nh; i++) {
    bindings_string_set(&entries[i].f0, hs[i].name);
    entries[i].f1.ptr = (uint8_t *)hs[i].value;
    entries[i].f1.len = strlen(hs[i].value);
  }
  wasi_http_types_list_tuple2_field_name_field_value_t list = {entries, nh};
  wasi_http_types_own_fields_t fields;
  wasi_http_types_header_error_t herr;
  bool ok = wasi_http_types_static_fields_from_list(&list, &fields, &herr);
  free(entries);
  if (!ok) {
    jb_lit(why, "a request header was refused (invalid syntax or forbidden)");
    return NULL;
  }
  *req = wasi_http_types_constructor_outgoing_request(fields);
  wasi_http_types_borrow_outgoing_request_t b = wasi_http_types_borrow_outgoing_request(*req);
  wasi_http_types_method_t post = {.tag = WASI_HTTP_TYPES_METHOD_POST};
  wasi_http_types_scheme_t scheme = {.tag = t->https ? WASI_HTTP_TYPES_SCHEME_HTTPS : WASI_HTTP_TYPES_SCHEME_HTTP};
  bindings_string_t authority = t->authority, path = t->path;
  wasi_http_types_method_outgoing_request_set_method(b, &post);
  wasi_http_types_method_outgoing_request_set_scheme(b, &scheme);
  wasi_http_types_method_outgoing_request_set_authority(b, &authority);
  wasi_http_types_method_outgoing_request_set_path_with_query(b, &path);
  return req;
}

/* Writes the whole body through the outgoing-body stream and finishes it. */
static bool write_body(wasi_http_types_own_outgoing_request_t req, const char *body, size_t n, json_buf *why) {
  wasi_http_types_own_outgoing_body_t ob;
  if (!wasi_http_types_method_outgoing_request_body(wasi_http_types_borrow_outgoing_request(req), &ob)) {
    jb_lit(why, "the request body cannot be opened");
    return false;
  }
  wasi_http_types_own_output_stream_t os;
  if (!wasi_http_types_method_outgoing_body_write(wasi_http_types_borrow_outgoing_body(ob), &os)) {
    wasi_http_types_outgoing_body_drop_own(ob);
    jb_lit(why, "the request body stream cannot be opened");
    return false;
  }
  bool ok = true;
  for (size_t off = 0; off < n && ok; off += WRITE_CHUNK) {
    bindings_list_u8_t chunk = {(uint8_t *)body + off, n - off < WRITE_CHUNK ? n - off : WRITE_CHUNK};
    wasi_io_streams_stream_error_t err;
    ok = wasi_io_streams_method_output_stream_blocking_write_and_flush(wasi_io_streams_borrow_output_stream(os), &chunk, &err);
    if (!ok && err.tag == WASI_IO_STREAMS_STREAM_ERROR_LAST_OPERATION_FAILED) wasi_io_error_error_drop_own(err.val.last_operation_failed);
  }
  wasi_io_streams_output_stream_drop_own(os);
  wasi_http_types_error_code_t ferr;
  if (!wasi_http_types_static_outgoing_body_finish(ob, NULL, &ferr)) {
    if (ok) describe_error(why, &ferr);
    else wasi_http_types_error_code_free(&ferr);
    ok = false;
  }
  if (!ok && why->len == 0) jb_lit(why, "the request body could not be written");
  return ok;
}

/* Reads the body: a 2xx's to the callback, an error answer's into a->error (its start, bounded). */
static void read_body(wasi_http_types_own_incoming_response_t resp, attempt *a, http_body_fn fn, void *ctx) {
  wasi_http_types_own_incoming_body_t ib;
  if (!wasi_http_types_method_incoming_response_consume(wasi_http_types_borrow_incoming_response(resp), &ib)) return;
  wasi_http_types_own_input_stream_t is;
  if (!wasi_http_types_method_incoming_body_stream(wasi_http_types_borrow_incoming_body(ib), &is)) {
    wasi_http_types_incoming_body_drop_own(ib);
    return;
  }
  size_t delivered = 0;
  for (;;) {
    bindings_list_u8_t got;
    wasi_io_streams_stream_error_t err;
    if (!wasi_io_streams_method_input_stream_blocking_read(wasi_io_streams_borrow_input_stream(is), READ_CHUNK, &got, &err)) {
      if (err.tag == WASI_IO_STREAMS_STREAM_ERROR_LAST_OPERATION_FAILED) {
        wasi_io_error_error_drop_own(err.val.last_operation_failed);
        if (a->kind == ATTEMPT_OK && delivered > 0) a->body_broken = true;
        else {
          // Nothing of it reached the caller: the attempt failed as a connection does, and is retried.
          a->kind = ATTEMPT_CONNECTION;
          jb_free(&a->error);
          jb_lit(&a->error, "the connection broke off while the response body was read");
        }
      }
      break;
    }
    const char *p = (const char *)got.ptr;
    bool more = true;
    if (a->kind == ATTEMPT_OK) {
      delivered += got.len;
      more = got.len == 0 || fn(ctx, p, got.len);
    } else {
      a->error_units += utf16_units(p, got.len);
      size_t room = a->error.len < ERROR_KEEP_BYTES ? ERROR_KEEP_BYTES - a->error.len : 0;
      jb_raw(&a->error, p, got.len < room ? got.len : room);
    }
    bindings_list_u8_free(&got);
    if (!more) break;
  }
  wasi_io_streams_input_stream_drop_own(is);
  wasi_http_types_incoming_body_drop_own(ib);
}

static void one_attempt(const target *t, const http_header *hs, size_t nh, const char *body, size_t n, attempt *a, http_body_fn fn,
                        void *ctx) {
  wasi_http_types_own_outgoing_request_t req;
  a->kind = ATTEMPT_CONNECTION;
  if (!build_request(t, hs, nh, &a->error, &req)) return;
  if (!write_body(req, body, n, &a->error)) {
    wasi_http_types_outgoing_request_drop_own(req);
    return;
  }
  wasi_http_outgoing_handler_own_future_incoming_response_t fut;
  wasi_http_outgoing_handler_error_code_t herr;
  if (!wasi_http_outgoing_handler_handle(req, NULL, &fut, &herr)) {
    describe_error(&a->error, &herr);
    return;
  }
  wasi_http_types_borrow_future_incoming_response_t bf = wasi_http_types_borrow_future_incoming_response(fut);
  wasi_http_types_own_pollable_t ready = wasi_http_types_method_future_incoming_response_subscribe(bf);
  wasi_io_poll_method_pollable_block(wasi_io_poll_borrow_pollable(ready));
  wasi_io_poll_pollable_drop_own(ready);
  wasi_http_types_result_result_own_incoming_response_error_code_void_t got;
  bool some = wasi_http_types_method_future_incoming_response_get(bf, &got);
  wasi_http_types_future_incoming_response_drop_own(fut);
  if (!some || got.is_err) {
    jb_lit(&a->error, "the response was already taken");
    return;
  }
  if (got.val.ok.is_err) {
    describe_error(&a->error, &got.val.ok.val.err);
    return;
  }
  wasi_http_types_own_incoming_response_t resp = got.val.ok.val.ok;
  a->status = wasi_http_types_method_incoming_response_status(wasi_http_types_borrow_incoming_response(resp));
  a->kind = a->status >= 200 && a->status <= 299 ? ATTEMPT_OK : ATTEMPT_STATUS;
  wasi_http_types_own_headers_t headers = wasi_http_types_method_incoming_response_headers(wasi_http_types_borrow_incoming_response(resp));
  if (a->kind == ATTEMPT_OK) a->content_type = header_value(headers, "content-type");
  else {
    char *ra = header_value(headers, "retry-after");
    a->retry_after = retry_after_ms(ra);
    free(ra);
  }
  wasi_http_types_fields_drop_own(headers);
  read_body(resp, a, fn, ctx);
  wasi_http_types_incoming_response_drop_own(resp);
}

static bool retryable(int status) { return status == 429 || (status >= 500 && status <= 599); }

static void message(char **out, json_buf *b) {
  jb_raw(b, "", 1);
  *out = b->failed ? strdup("out of memory") : b->data;
  if (b->failed) jb_free(b);
}

void http_post(const char *url, const http_header *headers, size_t n_headers, const char *body, size_t body_len, http_retry retry,
               http_body_fn on_body, void *ctx, http_outcome *out) {
  memset(out, 0, sizeof *out);
  target t = {0};
  if (!parse_url(url, &t)) {
    json_buf m = {0};
    jb_lit(&m, "the provider URL is not http:// or https://: ");
    jb_lit(&m, url);
    message(&out->failure, &m);
    jb_lit(&out->attempts, "[]");
    return;
  }
  jb_lit(&out->attempts, "[");
  for (int n = 1;; n++) {
    attempt a = {.retry_after = -1};
    one_attempt(&t, headers, n_headers, body, body_len, &a, on_body, ctx);
    out->attempt_count = (size_t)n;
    out->status = a.status;
    if (n > 1) jb_lit(&out->attempts, ",");
    jb_lit(&out->attempts, "{\"attempt\":");
    jb_int(&out->attempts, n);
    json_buf err = {0}; /* the attempt's error text, cut */
    if (a.kind == ATTEMPT_CONNECTION) {
      json_buf full = {0};
      jb_lit(&full, "connection failed: ");
      jb_raw(&full, a.error.data, a.error.len);
      http_cut(&err, full.data, full.len);
      jb_free(&full);
    } else {
      jb_lit(&out->attempts, ",\"status\":");
      jb_int(&out->attempts, a.status);
      if (a.kind == ATTEMPT_STATUS) cut_counted(&err, a.error.data, a.error.len, a.error_units);
    }
    if (a.kind != ATTEMPT_OK) {
      jb_lit(&out->attempts, ",\"error\":");
      jb_str(&out->attempts, err.data ? err.data : "", err.len);
    }
    if (a.kind == ATTEMPT_STATUS && a.retry_after >= 0) {
      jb_lit(&out->attempts, ",\"retry_after_ms\":");
      jb_int(&out->attempts, (int64_t)fmin(a.retry_after, 1e15));
    }
    bool again = a.kind == ATTEMPT_CONNECTION || (a.kind == ATTEMPT_STATUS && retryable(a.status));
    if (a.kind == ATTEMPT_OK) {
      out->content_type = a.content_type;
      out->body_broken = a.body_broken;
    } else if (!again || n >= retry.max_attempts) {
      json_buf m = {0};
      char head[96];
      if (a.kind == ATTEMPT_CONNECTION) {
        jb_lit(&m, "cannot reach ");
        jb_lit(&m, url);
        snprintf(head, sizeof head, " after %d attempt(s): ", n);
      } else {
        snprintf(head, sizeof head, retryable(a.status) ? "provider answered HTTP %d after %d attempt(s): " : "provider answered HTTP %d: ",
                 a.status, n);
      }
      jb_lit(&m, head);
      jb_raw(&m, err.data, err.len);
      message(&out->failure, &m);
      again = false;
    }
    uint64_t delay = 0;
    if (again) {
      delay = (uint64_t)backoff_ms(retry, n, a.kind == ATTEMPT_STATUS ? a.retry_after : -1);
      jb_lit(&out->attempts, ",\"delay_ms\":");
      jb_int(&out->attempts, (int64_t)delay);
    }
    jb_lit(&out->attempts, "}");
    jb_free(&err);
    jb_free(&a.error);
    if (a.kind != ATTEMPT_OK) free(a.content_type);
    if (!again) break;
    http_sleep_ms(delay);
  }
  jb_lit(&out->attempts, "]");
  bindings_string_free(&t.authority);
  bindings_string_free(&t.path);
}

void http_outcome_free(http_outcome *o) {
  free(o->failure);
  free(o->content_type);
  jb_free(&o->attempts);
  memset(o, 0, sizeof *o);
}
