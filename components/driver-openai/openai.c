/* components/driver-openai/openai.c — the inference driver for the OpenAI Chat Completions API.
 *
 *   env  MURMUR_INFERENCE_ENDPOINT (required; posts to <endpoint>/chat/completions when it ends in a
 *        version segment such as /v1, else to <endpoint>/v1/chat/completions as the reference
 *        runtime's driver does — so https://api.openai.com and https://api.openai.com/v1 both work),
 *        MURMUR_INFERENCE_API_KEY (optional; Authorization: Bearer), MURMUR_INFERENCE_DRIVER_CONFIG
 *        (optional JSON: max_tokens_field "max_tokens" for servers without max_completion_tokens;
 *        max_attempts, retry_base_ms: components/c/http.h)
 *   in   tool-input.data = {model, max_tokens, messages, tools, params, system, continuation_id?, prompt_cache_key}
 *   out  tool-result.data = {stop_reason, content, usage?, error?, attempts?}
 * The answer streams (stream: true, stream_options.include_usage): text and reasoning deltas go to
 * the task as they arrive (murmur:text/chunks); a plain JSON answer is read too. */
#include <string.h>

#include "driver.h"
#include "http.h"
#include "openai.h"

static void emit(bool thinking, const char *s, size_t n) {
  if (thinking) driver_emit_thinking(s, n);
  else driver_emit_text(s, n);
}

static void call(driver_call *c, driver_result *ret) {
  json_buf url = {0}, body = {0}, auth = {0};
  oa_url(&url, c->endpoint);
  oa_body(&body, c->request, c->config);
  http_header headers[3] = {{"content-type", "application/json"}, {"accept", "text/event-stream, application/json"}};
  size_t n_headers = 2;
  if (c->api_key) {
    jb_lit(&auth, "Bearer ");
    jb_lit(&auth, c->api_key);
    headers[n_headers++] = (http_header){"authorization", auth.data};
  }
  if (url.failed || body.failed || auth.failed) {
    driver_failure(ret, "out of memory building the request", 34, NULL);
  } else {
    oa_reply reply;
    http_outcome out;
    memset(&out, 0, sizeof out);
    oa_reply_init(&reply, emit);
    http_post(url.data, headers, n_headers, body.data, body.len, http_retry_of(c->config), oa_reply_feed, &reply, &out);
    const char *attempts = out.attempts.data ? out.attempts.data : "[]";
    json_buf answer = {0}, error = {0};
    if (out.failure) driver_failure(ret, out.failure, strlen(out.failure), attempts);
    else if (oa_reply_finish(&reply, &answer, &error)) driver_answer(ret, &answer, attempts, out.attempt_count);
    else driver_failure(ret, error.data ? error.data : "", error.len, attempts);
    jb_free(&answer);
    jb_free(&error);
    oa_reply_free(&reply);
    http_outcome_free(&out);
  }
  jb_free(&url);
  jb_free(&body);
  jb_free(&auth);
}

void exports_murmur_tool_run_run(driver_input *input, driver_result *ret) {
  driver_call c;
  if (!driver_begin(input, &c, ret)) return;
  call(&c, ret);
  driver_end(&c);
}
