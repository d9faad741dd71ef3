/* components/driver-anthropic/request.c — a driver request as a Messages API request body.
 * `prompt_cache_key` is NOT forwarded: the Messages API rejects fields it does not define. */
#include <stdlib.h>
#include <string.h>

#include "anthropic.h"

bool anthropic_truthy(const json_value *v) {
  switch (json_type_of(v)) {
    case JSON_NULL: return false;
    case JSON_BOOL: return json_bool(v);
    case JSON_STRING: {
      size_t n;
      json_string(v, &n);
      return n > 0;
    }
    case JSON_NUMBER: {
      json_buf b = {0};
      jb_value(&b, v);
      jb_raw(&b, "", 1);
      bool t = !b.failed && strtod(b.data, NULL) != 0;
      jb_free(&b);
      return t;
    }
    default: return true;
  }
}

/* `"key":value` when the value is present (JS's JSON.stringify leaves out undefined members). */
static void member(json_buf *out, bool *first, const char *key, const json_value *v) {
  if (!v) return;
  jb_lit(out, *first ? "\"" : ",\"");
  jb_lit(out, key);
  jb_lit(out, "\":");
  jb_value(out, v);
  *first = false;
}

/* One message of the Messages API being built: its content blocks, comma-separated. */
typedef struct {
  bool assistant;
  bool tool_results_only; /* a user message holding only tool_result blocks: later results join it */
  json_buf blocks;
} out_message;

static void tool_result_block(json_buf *b, const json_value *m) {
  bool first = false;
  jb_lit(b, "{\"type\":\"tool_result\"");
  member(b, &first, "tool_use_id", json_get(m, "tool_call_id"));
  jb_lit(b, ",\"content\":");
  json_buf text = {0};
  driver_text_of(&text, json_get(m, "content"));
  jb_str(b, text.data ? text.data : "", text.len);
  jb_free(&text);
  if (anthropic_truthy(json_get(m, "is_error"))) jb_lit(b, ",\"is_error\":true");
  jb_lit(b, "}");
}

/* The text and tool_use blocks of a user or assistant message; the Messages API rejects empty
 * text blocks, so those are left out. */
static void content_blocks(json_buf *b, const json_value *content) {
  if (json_type_of(content) == JSON_STRING) {
    size_t n;
    const char *s = json_string(content, &n);
    if (n == 0) return;
    jb_lit(b, "{\"type\":\"text\",\"text\":");
    jb_str(b, s, n);
    jb_lit(b, "}");
    return;
  }
  if (json_type_of(content) != JSON_ARRAY) return;
  for (size_t i = 0; i < json_count(content); i++) {
    const json_value *c = json_at(content, i);
    const json_value *type = json_get(c, "type");
    if (driver_is(type, "text")) {
      const json_value *text = json_get(c, "text");
      if (!anthropic_truthy(text)) continue;
      if (b->len) jb_lit(b, ",");
      jb_lit(b, "{\"type\":\"text\",\"text\":");
      jb_value(b, text);
      jb_lit(b, "}");
    } else if (driver_is(type, "tool_call")) {
      bool first = false;
      if (b->len) jb_lit(b, ",");
      jb_lit(b, "{\"type\":\"tool_use\"");
      member(b, &first, "id", json_get(c, "id"));
      member(b, &first, "name", json_get(c, "name"));
      const json_value *input = json_get(c, "input");
      jb_lit(b, ",\"input\":");
      if (input && json_type_of(input) != JSON_NULL) jb_value(b, input);
      else jb_lit(b, "{}");
      jb_lit(b, "}");
    }
  }
}

/* Tool results are grouped into one user message; a message with nothing to say (an assistant
 * turn that returned no text) is left out rather than sent empty. */
static void messages(json_buf *out, const json_value *ms) {
  size_t n = json_type_of(ms) == JSON_ARRAY ? json_count(ms) : 0;
  out_message *list = calloc(n ? n : 1, sizeof *list);
  size_t len = 0;
  for (size_t i = 0; list && i < n; i++) {
    const json_value *m = json_at(ms, i);
    if (driver_is(json_get(m, "role"), "tool")) {
      out_message *last = len ? &list[len - 1] : NULL;
      if (!last || last->assistant || !last->tool_results_only) {
        last = &list[len++];
        *last = (out_message){.tool_results_only = true};
      } else {
        jb_lit(&last->blocks, ",");
      }
      tool_result_block(&last->blocks, m);
      continue;
    }
    out_message *o = &list[len];
    *o = (out_message){.assistant = driver_is(json_get(m, "role"), "assistant")};
    content_blocks(&o->blocks, json_get(m, "content"));
    if (o->blocks.len) len++;
    else jb_free(&o->blocks);
  }
  jb_lit(out, "[");
  for (size_t i = 0; i < len; i++) {
    jb_lit(out, i ? ",{\"role\":\"" : "{\"role\":\"");
    jb_lit(out, list[i].assistant ? "assistant" : "user");
    jb_lit(out, "\",\"content\":[");
    jb_raw(out, list[i].blocks.data, list[i].blocks.len);
    jb_lit(out, "]}");
    jb_free(&list[i].blocks);
  }
  jb_lit(out, "]");
  free(list);
  if (!list) out->failed = true;
}

static void tools(json_buf *out, const json_value *ts) {
  jb_lit(out, ",\"tools\":[");
  for (size_t i = 0; i < json_count(ts); i++) {
    const json_value *t = json_at(ts, i);
    bool first = true;
    jb_lit(out, i ? ",{" : "{");
    member(out, &first, "name", json_get(t, "name"));
    const json_value *d = json_get(t, "description");
    jb_lit(out, first ? "\"description\":" : ",\"description\":");
    if (d && json_type_of(d) != JSON_NULL) jb_value(out, d);
    else jb_lit(out, "\"\"");
    const json_value *p = json_get(t, "parameters");
    jb_lit(out, ",\"input_schema\":");
    if (p && json_type_of(p) != JSON_NULL) jb_value(out, p);
    else jb_lit(out, "{\"type\":\"object\"}");
    jb_lit(out, "}");
  }
  jb_lit(out, "]");
}

void anthropic_request_body(json_buf *out, const json_value *req, const json_value *config) {
  bool first = true;
  jb_lit(out, "{");
  member(out, &first, "model", json_get(req, "model"));
  const json_value *max = json_get(req, "max_tokens");
  jb_lit(out, first ? "\"max_tokens\":" : ",\"max_tokens\":");
  if (max && json_type_of(max) != JSON_NULL) jb_value(out, max);
  else jb_lit(out, "8192");
  jb_lit(out, ",\"messages\":");
  messages(out, json_get(req, "messages"));
  jb_lit(out, ",\"stream\":true");
  const json_value *system = json_get(req, "system");
  if (anthropic_truthy(system)) member(out, &first, "system", system);
  const json_value *ts = json_get(req, "tools");
  if (json_type_of(ts) == JSON_ARRAY && json_count(ts) > 0) tools(out, ts);
  if (anthropic_truthy(json_get(config, "thinking"))) {
    const json_value *budget = json_get(config, "thinking_budget_tokens");
    jb_lit(out, ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":");
    if (budget && json_type_of(budget) != JSON_NULL) jb_value(out, budget);
    else jb_lit(out, "1024");
    jb_lit(out, "}");
  }
  jb_lit(out, "}");
}
