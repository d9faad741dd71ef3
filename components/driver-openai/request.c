/* components/driver-openai/request.c — the Chat Completions request for a driver request.
 * Field for field what the JS driver sent (JSON.stringify leaves out undefined members, so an
 * absent field here is left out too, and a JSON null is kept). */
#include <string.h>

#include "driver.h"
#include "openai.h"

bool oa_truthy(const json_value *v) {
  size_t n;
  switch (json_type_of(v)) {
    case JSON_NULL: return false;
    case JSON_BOOL: return json_bool(v);
    case JSON_STRING: return json_string(v, &n) && n > 0;
    case JSON_NUMBER: {
      int64_t i;
      return !(json_int(v, &i) && i == 0);
    }
    default: return true;
  }
}

/* ,"key":<value> when the value is present (JSON.stringify drops undefined members). */
static void member(json_buf *b, const char *key, const json_value *v) {
  if (!v) return;
  jb_lit(b, ",\"");
  jb_lit(b, key);
  jb_lit(b, "\":");
  jb_value(b, v);
}

static void quoted_text_of(json_buf *b, const json_value *content) {
  json_buf t = {0};
  driver_text_of(&t, content);
  jb_str(b, t.data ? t.data : "", t.len);
  jb_free(&t);
}

/* An assistant's tool_call blocks as Chat Completions tool_calls: arguments are a JSON string. */
static size_t tool_calls(json_buf *b, const json_value *blocks) {
  size_t n = 0;
  for (size_t i = 0; i < json_count(blocks) && json_type_of(blocks) == JSON_ARRAY; i++) {
    const json_value *blk = json_at(blocks, i);
    if (!driver_is(json_get(blk, "type"), "tool_call")) continue;
    jb_lit(b, n++ ? ",{\"type\":\"function\"" : "{\"type\":\"function\"");
    member(b, "id", json_get(blk, "id"));
    jb_lit(b, ",\"function\":{\"arguments\":");
    const json_value *input = json_get(blk, "input");
    json_buf args = {0};
    if (json_type_of(input) == JSON_NULL) jb_lit(&args, "{}"); /* b.input ?? {} */
    else jb_value(&args, input);
    jb_str(b, args.data ? args.data : "", args.len);
    jb_free(&args);
    member(b, "name", json_get(blk, "name"));
    jb_lit(b, "}}");
  }
  return n;
}

static void message(json_buf *b, const json_value *m) {
  const json_value *content = json_get(m, "content");
  if (driver_is(json_get(m, "role"), "tool")) {
    jb_lit(b, "{\"role\":\"tool\"");
    member(b, "tool_call_id", json_get(m, "tool_call_id"));
    jb_lit(b, ",\"content\":");
    quoted_text_of(b, content);
    jb_lit(b, "}");
    return;
  }
  json_buf text = {0};
  driver_text_of(&text, content);
  if (!driver_is(json_get(m, "role"), "assistant")) {
    jb_lit(b, "{\"role\":\"user\",\"content\":");
    jb_str(b, text.data ? text.data : "", text.len);
    jb_lit(b, "}");
    jb_free(&text);
    return;
  }
  jb_lit(b, "{\"role\":\"assistant\",\"content\":");
  if (text.len) jb_str(b, text.data, text.len);
  else jb_lit(b, "null"); /* a turn of only tool calls: content null, as the API documents */
  jb_free(&text);
  /* A string content has no tool calls; the calls go after content, as the JS driver wrote them. */
  if (json_type_of(content) == JSON_ARRAY) {
    json_buf calls = {0};
    if (tool_calls(&calls, content)) {
      jb_lit(b, ",\"tool_calls\":[");
      jb_raw(b, calls.data, calls.len);
      jb_lit(b, "]");
    }
    if (calls.failed) b->failed = true;
    jb_free(&calls);
  }
  jb_lit(b, "}");
}

static void messages(json_buf *b, const json_value *req) {
  const json_value *system = json_get(req, "system");
  const json_value *list = json_get(req, "messages");
  bool first = true;
  jb_lit(b, "[");
  if (oa_truthy(system)) {
    jb_lit(b, "{\"role\":\"system\",\"content\":");
    jb_value(b, system);
    jb_lit(b, "}");
    first = false;
  }
  for (size_t i = 0; i < json_count(list) && json_type_of(list) == JSON_ARRAY; i++) {
    if (!first) jb_lit(b, ",");
    first = false;
    message(b, json_at(list, i));
  }
  jb_lit(b, "]");
}

static void tools(json_buf *b, const json_value *list) {
  jb_lit(b, ",\"tools\":[");
  for (size_t i = 0; i < json_count(list); i++) {
    const json_value *t = json_at(list, i);
    const json_value *desc = json_get(t, "description"), *params = json_get(t, "parameters");
    jb_lit(b, i ? ",{\"type\":\"function\",\"function\":{" : "{\"type\":\"function\",\"function\":{");
    jb_lit(b, "\"description\":");
    if (json_type_of(desc) == JSON_NULL) jb_lit(b, "\"\""); /* t.description ?? '' */
    else jb_value(b, desc);
    jb_lit(b, ",\"parameters\":");
    if (json_type_of(params) == JSON_NULL) jb_lit(b, "{\"type\":\"object\"}");
    else jb_value(b, params);
    member(b, "name", json_get(t, "name"));
    jb_lit(b, "}}");
  }
  jb_lit(b, "]");
}

void oa_body(json_buf *b, const json_value *req, const json_value *config) {
  /* max_completion_tokens: Chat Completions deprecated max_tokens, and reasoning models refuse it.
   * An older OpenAI-compatible server that only knows max_tokens: config {"max_tokens_field": "max_tokens"}. */
  const char *limit = driver_is(json_get(config, "max_tokens_field"), "max_tokens") ? "max_tokens" : "max_completion_tokens";
  const json_value *max = json_get(req, "max_tokens");
  jb_lit(b, "{\"stream\":true,\"stream_options\":{\"include_usage\":true}");
  member(b, "model", json_get(req, "model"));
  jb_lit(b, ",\"");
  jb_lit(b, limit);
  jb_lit(b, "\":");
  if (json_type_of(max) == JSON_NULL) jb_lit(b, "8192"); /* req.max_tokens ?? 8192 */
  else jb_value(b, max);
  jb_lit(b, ",\"messages\":");
  messages(b, req);
  /* prompt_cache_key: Chat Completions defines a field of that name for cache routing. */
  const json_value *cache_key = json_get(req, "prompt_cache_key");
  if (oa_truthy(cache_key)) member(b, "prompt_cache_key", cache_key);
  const json_value *list = json_get(req, "tools");
  if (json_type_of(list) == JSON_ARRAY && json_count(list) > 0) tools(b, list);
  jb_lit(b, "}");
}

/* The JS driver's test: /\/v\d+[a-z0-9]*$/i on the endpoint. */
static bool ends_in_version(const char *e) {
  const char *seg = strrchr(e, '/');
  if (!seg || (seg[1] != 'v' && seg[1] != 'V')) return false;
  const char *p = seg + 2;
  if (*p < '0' || *p > '9') return false;
  for (; *p; p++) {
    char c = (char)(*p | 0x20);
    if (!((c >= 'a' && c <= 'z') || (*p >= '0' && *p <= '9'))) return false;
  }
  return true;
}

void oa_url(json_buf *out, const char *endpoint) {
  jb_lit(out, endpoint);
  if (!ends_in_version(endpoint)) jb_lit(out, "/v1");
  jb_lit(out, "/chat/completions");
}
