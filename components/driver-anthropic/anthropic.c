/* components/driver-anthropic/anthropic.c — inference driver for the Anthropic Messages API.
 *
 * Contract (components/c/driver.h): posts to <MURMUR_INFERENCE_ENDPOINT>/v1/messages with
 * x-api-key (MURMUR_INFERENCE_API_KEY) and anthropic-version 2023-06-01, `stream: true`; the
 * driver config (MURMUR_INFERENCE_DRIVER_CONFIG) may set thinking, thinking_budget_tokens,
 * beta_features (the anthropic-beta header), max_attempts and retry_base_ms (components/c/http.h).
 * Text and thinking deltas reach the task's stream as each SSE event is read. */
#include <stdlib.h>
#include <string.h>

#include "anthropic.h"
#include "driver.h"
#include "http.h"

/* anthropic-beta: the beta_features joined with ',' (JS's Array#join: strings as they are). */
static char *beta_header(const json_value *config) {
  const json_value *f = json_get(config, "beta_features");
  if (json_type_of(f) != JSON_ARRAY || json_count(f) == 0) return NULL;
  json_buf b = {0};
  for (size_t i = 0; i < json_count(f); i++) {
    const json_value *v = json_at(f, i);
    if (i) jb_lit(&b, ",");
    size_t n;
    const char *s = json_string(v, &n);
    if (s) jb_raw(&b, s, n);
    else if (json_type_of(v) != JSON_NULL) jb_value(&b, v);
  }
  jb_raw(&b, "", 1);
  return b.data;
}

static void run(driver_call *call, driver_result *ret) {
  json_buf body = {0};
  anthropic_request_body(&body, call->request, call->config);
  http_header headers[5] = {
    {"content-type", "application/json"},
    {"anthropic-version", "2023-06-01"},
    {"accept", "text/event-stream, application/json"},
  };
  size_t nh = 3;
  if (call->api_key) headers[nh++] = (http_header){"x-api-key", call->api_key};
  char *beta = beta_header(call->config);
  if (beta) headers[nh++] = (http_header){"anthropic-beta", beta};
  json_buf url = {0};
  jb_lit(&url, call->endpoint);
  jb_lit(&url, "/v1/messages");
  jb_raw(&url, "", 1);

  anthropic_reader *reader = anthropic_reader_new();
  http_outcome sent;
  if (body.failed || url.failed || !reader) {
    driver_failure(ret, "out of memory building the request", 34, NULL);
    goto done;
  }
  http_post(url.data, headers, nh, body.data, body.len, http_retry_of(call->config), anthropic_reader_feed, reader, &sent);
  if (sent.failure) {
    driver_failure(ret, sent.failure, strlen(sent.failure), sent.attempts.data);
  } else {
    json_buf answer = {0}, why = {0};
    if (anthropic_reader_finish(reader, sent.body_broken, &answer, &why)) {
      driver_answer(ret, &answer, sent.attempts.data, sent.attempt_count);
    } else {
      json_buf m = {0};
      jb_lit(&m, "unreadable provider response: ");
      jb_raw(&m, why.data, why.len);
      driver_failure(ret, m.data ? m.data : "", m.len, sent.attempts.data);
      jb_free(&m);
      jb_free(&answer);
    }
    jb_free(&why);
  }
  http_outcome_free(&sent);
done:
  anthropic_reader_free(reader);
  jb_free(&body);
  jb_free(&url);
  free(beta);
}

void exports_murmur_tool_run_run(exports_murmur_tool_run_tool_input_t *input, exports_murmur_tool_run_tool_result_t *ret) {
  driver_call call;
  if (!driver_begin(input, &call, ret)) return;
  run(&call, ret);
  driver_end(&call);
}
