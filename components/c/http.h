/* components/c/http.h — the built-in drivers' one provider call: a POST over wasi:http with the
 * retries the JS drivers made (their provider-http.js, now gone), the response body handed over
 * as it arrives.
 *
 * Provider faults. Retries live here, in the driver: it holds the whole request body and sees the
 * status and Retry-After before any answer reaches the runtime, so a retry replays exactly what was
 * sent; a replay in the host's wasi:http handler would have to buffer the body the guest streams
 * into it and hide responses the guest already holds a future for. Every attempt is reported back
 * (`attempts`) and the runtime writes each to the trace.
 *
 *   retried   429 and 5xx answers, and connections that fail before a 2xx answer's first body byte
 *   not       other statuses; a 2xx whose body breaks off after bytes went to the caller (they may
 *             already be on the task's stream: the caller sees the body end and judges it)
 *   attempts  config max_attempts (an integer >= 1; default 3)
 *   backoff   full jitter in [top/2, top], top = retry_base_ms (default 500) * 2^(attempt-1), at most
 *             30 s; a Retry-After (delta-seconds or an HTTP-date) wins, capped the same
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "json.h"

#define HTTP_ERROR_TEXT_MAX 512 /* provider error text is cut to this many characters (UTF-16 units, as JS counts) */

typedef struct {
  const char *name;
  const char *value;
} http_header;

/* The response body of a 2xx answer, as it arrives; return false to stop reading (the call ends). */
typedef bool (*http_body_fn)(void *ctx, const char *bytes, size_t n);

typedef struct {
  int max_attempts;     /* >= 1 */
  double retry_base_ms; /* base of the exponential backoff */
} http_retry;

/* The retry settings of a driver config object (max_attempts, retry_base_ms), defaults for the rest. */
http_retry http_retry_of(const json_value *config);

typedef struct {
  /* NULL when a 2xx answer came (its body went to the callback); else why the call failed:
   * "cannot reach <url> after N attempt(s): connection failed: …" or
   * "provider answered HTTP <status>[ after N attempt(s)]: <body cut>". */
  char *failure;
  int status;          /* the last answer's status, 0 when none came */
  char *content_type;  /* of the 2xx answer (lowercase header value), NULL when absent */
  bool body_broken;    /* the 2xx body ended with a transport error, not its end */
  json_buf attempts;   /* a JSON array: one object per attempt ({attempt, status?, error?, retry_after_ms?, delay_ms?}) */
  size_t attempt_count;
} http_outcome;

/* POSTs `body` to `url` (http:// or https://) with `headers`; answers after the 2xx body ended or
 * the callback stopped, or after the last failed attempt. */
void http_post(const char *url, const http_header *headers, size_t n_headers, const char *body, size_t body_len,
               http_retry retry, http_body_fn on_body, void *ctx, http_outcome *out);
void http_outcome_free(http_outcome *o);

/* `s` as JS's cut() wrote it: at most HTTP_ERROR_TEXT_MAX characters, then
 * "… (N more characters cut)". Appended to `out` unquoted. */
void http_cut(json_buf *out, const char *s, size_t n);

/* Sleeps on the monotonic clock (wasi:clocks poll). */
void http_sleep_ms(uint64_t ms);
