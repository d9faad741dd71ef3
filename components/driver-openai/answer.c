/* components/driver-openai/answer.c — the driver's answer from what reply.c read: the streamed
 * message or the plain JSON one, as {stop_reason, content, usage?} (the JS driver's fromChoice). */
#include <string.h>

#include "openai.h"

static const char *stop_of(const char *finish) {
  static const char *const map[][2] = {
    {"stop", "end_turn"},   {"tool_calls", "tool_call"},     {"function_call", "tool_call"},
    {"length", "max_tokens"}, {"content_filter", "end_turn"},
  };
  for (size_t i = 0; finish && i < sizeof map / sizeof map[0]; i++)
    if (strcmp(finish, map[i][0]) == 0) return map[i][1];
  return "end_turn";
}

/* A tool call's input from its arguments string: parsed, {} when empty, else kept unparsed. */
static void input_of(json_buf *b, const char *args, size_t n) {
  json_value *v = n ? json_parse(args, n, NULL, 0) : NULL;
  if (n == 0) jb_lit(b, "{}");
  else if (v) jb_value(b, v);
  else {
    jb_lit(b, "{\"_unparsed\":");
    jb_str(b, args, n);
    jb_lit(b, "}");
  }
  json_free(v);
}

static void usage_of(json_buf *b, const int64_t usage[3]) {
  static const char *const names[3] = {"input_tokens", "output_tokens", "cached_tokens"};
  bool any = false;
  for (int k = 0; k < 3; k++) {
    if (usage[k] < 0) continue;
    jb_lit(b, any ? ",\"" : ",\"usage\":{\"");
    jb_lit(b, names[k]);
    jb_lit(b, "\":");
    jb_int(b, usage[k]);
    any = true;
  }
  if (any) jb_lit(b, "}");
}

static void open_answer(json_buf *b, const char *finish) {
  jb_lit(b, "{\"stop_reason\":\"");
  jb_lit(b, stop_of(finish));
  jb_lit(b, "\",\"content\":[");
}

/* ,"key":<value> when present (JSON.stringify drops undefined members). */
static void member(json_buf *b, const char *key, const json_value *v) {
  if (!v) return;
  jb_lit(b, ",\"");
  jb_lit(b, key);
  jb_lit(b, "\":");
  jb_value(b, v);
}

static void streamed(oa_reply *r, json_buf *b) {
  /* tool calls in index order, as the JS driver's sparse array listed them */
  for (size_t i = 1; i < r->n_slots; i++)
    for (size_t k = i; k > 0 && r->slots[k - 1].index > r->slots[k].index; k--) {
      oa_slot t = r->slots[k];
      r->slots[k] = r->slots[k - 1];
      r->slots[k - 1] = t;
    }
  bool first = true;
  open_answer(b, r->finish);
  if (r->text.len) {
    jb_lit(b, "{\"type\":\"text\",\"text\":");
    jb_str(b, r->text.data, r->text.len);
    jb_lit(b, "}");
    first = false;
  }
  for (size_t i = 0; i < r->n_slots; i++) {
    oa_slot *s = &r->slots[i];
    jb_lit(b, first ? "{\"type\":\"tool_call\",\"id\":" : ",{\"type\":\"tool_call\",\"id\":");
    jb_str(b, s->id.data ? s->id.data : "", s->id.len);
    jb_lit(b, ",\"name\":");
    jb_str(b, s->name.data ? s->name.data : "", s->name.len);
    jb_lit(b, ",\"input\":");
    input_of(b, s->arguments.data ? s->arguments.data : "", s->arguments.len);
    jb_lit(b, "}");
    first = false;
  }
  jb_lit(b, "]");
  usage_of(b, r->usage);
}

static void plain_call(json_buf *b, const json_value *c) {
  const json_value *fn = json_get(c, "function"), *args = json_get(fn, "arguments");
  size_t n;
  const char *s = json_string(args, &n);
  jb_lit(b, "{\"type\":\"tool_call\"");
  member(b, "id", json_get(c, "id"));
  member(b, "name", json_get(fn, "name"));
  jb_lit(b, ",\"input\":");
  if (!oa_truthy(args)) jb_lit(b, "{}");
  else if (s) input_of(b, s, n);
  else if (json_type_of(args) == JSON_NUMBER || json_type_of(args) == JSON_BOOL) jb_value(b, args);
  else { /* an object: JSON.parse of its String() failed in the JS driver, so it went back unparsed */
    jb_lit(b, "{\"_unparsed\":");
    jb_value(b, args);
    jb_lit(b, "}");
  }
  jb_lit(b, "}");
}

/* One JSON document: {choices: [{message, finish_reason}], usage}. */
static bool plain(oa_reply *r, json_buf *b, json_buf *error) {
  char err[160];
  json_buf fixed = {0};
  size_t len = r->raw.len;
  const char *text = oa_valid_utf8(r->raw.data ? r->raw.data : "", &len, &fixed);
  json_value *j = json_parse(text, len, err, sizeof err);
  jb_free(&fixed);
  if (!j) {
    jb_lit(error, err);
    return false;
  }
  const json_value *choices = json_get(j, "choices");
  const json_value *choice = json_type_of(choices) == JSON_ARRAY ? json_at(choices, 0) : NULL;
  const json_value *msg = json_get(choice, "message"), *content = json_get(msg, "content");
  const json_value *calls = json_get(msg, "tool_calls"), *usage = json_get(j, "usage");
  size_t n;
  const char *finish = json_string(json_get(choice, "finish_reason"), &n);
  bool first = true;
  open_answer(b, finish);
  if (oa_truthy(content)) {
    jb_lit(b, "{\"type\":\"text\",\"text\":");
    jb_value(b, content);
    jb_lit(b, "}");
    first = false;
  }
  for (size_t i = 0; i < json_count(calls) && json_type_of(calls) == JSON_ARRAY; i++) {
    if (!first) jb_lit(b, ",");
    plain_call(b, json_at(calls, i));
    first = false;
  }
  jb_lit(b, "]");
  if (json_type_of(usage) == JSON_OBJECT) {
    const json_value *v[3] = {json_get(usage, "prompt_tokens"), json_get(usage, "completion_tokens"),
                              json_get(json_get(usage, "prompt_tokens_details"), "cached_tokens")};
    int64_t u[3];
    for (int k = 0; k < 3; k++)
      if (!json_int(v[k], &u[k]) || u[k] < 0) u[k] = -1;
    usage_of(b, u);
  }
  json_free(j);
  return true;
}

bool oa_reply_finish(oa_reply *r, json_buf *body, json_buf *error) {
  bool ok = false;
  json_buf why = {0};
  if (r->error.len == 0 && r->mode == 1) ok = plain(r, body, &why);
  else if (r->error.len == 0) {
    /* The JS driver read every data: line, even a last one without its blank line: end it. */
    if (r->mode == 2) oa_reply_feed(r, "\n\n", 2);
    if (r->error.len == 0 && !r->done && !r->finished)
      /* A stream cut before its final event (no finish_reason, no [DONE]) holds a partial answer:
       * a failed call, never a completed one. (A cut after the finish chunk loses only the usage.) */
      jb_lit(&why, "the provider stream ended before its finish_reason chunk and [DONE] (connection cut mid-answer)");
    else if (r->error.len == 0) {
      streamed(r, body);
      ok = true;
    }
  }
  if (r->error.len) jb_raw(&why, r->error.data, r->error.len);
  if (!ok) {
    jb_lit(error, "unreadable provider response: ");
    jb_raw(error, why.data, why.len);
  }
  jb_free(&why);
  return ok;
}
