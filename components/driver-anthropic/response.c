/* components/driver-anthropic/response.c — a Messages API answer, read as it arrives: an SSE
 * stream (message_start, content_block_start/delta/stop, message_delta, message_stop, error) whose
 * text and thinking deltas go to the task's stream the moment each event is read, or a plain JSON
 * message. Either way the answer is {stop_reason, content, usage?} in the driver's terms. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "anthropic.h"
#include "http.h"
#include "sse.h"

#define MAX_EVENT (8u << 20) /* one SSE event; a content delta is a few bytes */
#define MAX_JSON (32u << 20) /* a whole plain-JSON answer */

/* The provider's stop reasons in the driver's terms; any other is end_turn. */
static const char *stop_of(const json_value *v) {
  static const char *const map[][2] = {
    {"end_turn", "end_turn"},   {"stop_sequence", "end_turn"}, {"tool_use", "tool_call"},
    {"max_tokens", "max_tokens"}, {"pause_turn", "end_turn"},  {"refusal", "end_turn"},
  };
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (driver_is(v, map[i][0])) return map[i][1];
  return "end_turn";
}

/* The usage counts the runtime reads, each kept only when it is a non-negative integer. */
static const char *const USAGE_IN[4] = {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"};
static const char *const USAGE_OUT[4] = {"input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens"};
typedef struct {
  bool set[4];
  int64_t n[4];
} usage;

/* Object.assign(usage, u): a member present in u replaces the count, valid or not. */
static void usage_assign(usage *us, const json_value *u) {
  if (json_type_of(u) != JSON_OBJECT) return;
  for (int i = 0; i < 4; i++) {
    const json_value *v = json_get(u, USAGE_IN[i]);
    if (!v) continue;
    us->set[i] = json_int(v, &us->n[i]) && us->n[i] >= 0;
  }
}

static void usage_write(json_buf *out, const usage *us) {
  bool any = false;
  for (int i = 0; i < 4; i++) {
    if (!us->set[i]) continue;
    jb_lit(out, any ? ",\"" : ",\"usage\":{\"");
    jb_lit(out, USAGE_OUT[i]);
    jb_lit(out, "\":");
    jb_int(out, us->n[i]);
    any = true;
  }
  if (any) jb_lit(out, "}");
}

typedef struct {
  int64_t index;
  bool text_block, tool_block, has_text;
  json_buf text;  /* a text block's text */
  json_buf id, name, input; /* a tool_use block's members, as JSON (empty: absent) */
  json_buf partial; /* input_json_delta pieces */
} block;

struct anthropic_reader {
  enum { UNDECIDED, SSE, PLAIN } mode;
  sse_parser *sse;
  json_buf plain;
  block *blocks;
  size_t n_blocks, cap_blocks;
  const char *stop; /* the driver's stop reason, NULL until one came */
  usage usage;
  bool stopped;     /* message_stop came */
  json_buf fault;   /* why the answer is unreadable; empty while it is not */
};

static void copy_value(json_buf *b, const json_value *v) {
  jb_free(b);
  if (v) jb_value(b, v);
}

static block *block_at(anthropic_reader *r, int64_t index, bool create) {
  for (size_t i = 0; i < r->n_blocks; i++)
    if (r->blocks[i].index == index) return &r->blocks[i];
  if (!create) return NULL;
  if (r->n_blocks == r->cap_blocks) {
    size_t cap = r->cap_blocks ? 2 * r->cap_blocks : 8;
    block *nb = realloc(r->blocks, cap * sizeof *nb);
    if (!nb) return NULL;
    r->blocks = nb;
    r->cap_blocks = cap;
  }
  block *b = &r->blocks[r->n_blocks++];
  memset(b, 0, sizeof *b);
  b->index = index;
  return b;
}

static void block_clear(block *b) {
  jb_free(&b->text);
  jb_free(&b->id);
  jb_free(&b->name);
  jb_free(&b->input);
  jb_free(&b->partial);
}

static void block_start(anthropic_reader *r, const json_value *ev) {
  int64_t index;
  if (!json_int(json_get(ev, "index"), &index)) return;
  block *b = block_at(r, index, true);
  if (!b) return;
  block_clear(b);
  const json_value *cb = json_get(ev, "content_block");
  b->text_block = driver_is(json_get(cb, "type"), "text");
  b->tool_block = driver_is(json_get(cb, "type"), "tool_use");
  size_t n;
  const char *t = driver_str(json_get(cb, "text"), &n);
  b->has_text = t != NULL;
  if (t) jb_raw(&b->text, t, n);
  copy_value(&b->id, json_get(cb, "id"));
  copy_value(&b->name, json_get(cb, "name"));
  const json_value *input = json_get(cb, "input");
  if (input && json_type_of(input) != JSON_NULL) copy_value(&b->input, input);
}

static void block_delta(anthropic_reader *r, const json_value *ev) {
  int64_t index;
  block *b = json_int(json_get(ev, "index"), &index) ? block_at(r, index, false) : NULL;
  if (!b) return;
  const json_value *d = json_get(ev, "delta"), *type = json_get(d, "type");
  size_t n;
  if (driver_is(type, "text_delta")) {
    const char *t = driver_str(json_get(d, "text"), &n);
    b->has_text = true;
    if (!t) return;
    jb_raw(&b->text, t, n);
    driver_emit_text(t, n);
  } else if (driver_is(type, "thinking_delta")) {
    const char *t = driver_str(json_get(d, "thinking"), &n);
    if (t) driver_emit_thinking(t, n);
  } else if (driver_is(type, "input_json_delta")) {
    const char *t = driver_str(json_get(d, "partial_json"), &n);
    if (t) jb_raw(&b->partial, t, n);
  }
}

/* A tool_use block's input is whole at its stop: parsed from the pieces that came. */
static bool block_stop(anthropic_reader *r, const json_value *ev) {
  int64_t index;
  block *b = json_int(json_get(ev, "index"), &index) ? block_at(r, index, false) : NULL;
  if (!b || !b->tool_block || b->partial.len == 0) return true;
  char err[160];
  json_value *input = json_parse(b->partial.data, b->partial.len, err, sizeof err);
  if (!input) {
    jb_lit(&r->fault, "the tool_use input is not JSON: ");
    jb_lit(&r->fault, err);
    return false;
  }
  copy_value(&b->input, input);
  json_free(input);
  return true;
}

static bool on_event(void *ctx, const char *event, const char *data, size_t n) {
  anthropic_reader *r = ctx;
  char err[160];
  json_buf fixed = {0};
  data = driver_valid_utf8(data, &n, &fixed);
  json_value *ev = n ? json_parse(data, n, err, sizeof err) : NULL;
  jb_free(&fixed); /* the parsed value holds its own copies */
  if (!ev) return true; /* an event that is not JSON (a keep-alive, a comment) is passed over */
  const json_value *type = json_get(ev, "type");
  bool go = true;
  if (driver_is(type, "message_start")) {
    const json_value *m = json_get(ev, "message");
    const json_value *s = json_get(m, "stop_reason");
    r->stop = anthropic_truthy(s) ? stop_of(s) : NULL;
    memset(&r->usage, 0, sizeof r->usage);
    usage_assign(&r->usage, json_get(m, "usage"));
    for (size_t i = 0; i < r->n_blocks; i++) block_clear(&r->blocks[i]);
    r->n_blocks = 0;
  } else if (driver_is(type, "content_block_start")) {
    block_start(r, ev);
  } else if (driver_is(type, "content_block_delta")) {
    block_delta(r, ev);
  } else if (driver_is(type, "content_block_stop")) {
    go = block_stop(r, ev);
  } else if (driver_is(type, "message_delta")) {
    const json_value *s = json_get(json_get(ev, "delta"), "stop_reason");
    if (anthropic_truthy(s)) r->stop = stop_of(s);
    usage_assign(&r->usage, json_get(ev, "usage"));
  } else if (driver_is(type, "message_stop")) {
    r->stopped = true;
  } else if (driver_is(type, "error")) {
    json_buf e = {0};
    const json_value *ej = json_get(ev, "error");
    if (ej) jb_value(&e, ej);
    jb_lit(&r->fault, "provider stream error: ");
    http_cut(&r->fault, e.data ? e.data : "", e.len);
    jb_free(&e);
    go = false;
  }
  json_free(ev);
  return go;
}

anthropic_reader *anthropic_reader_new(void) { return calloc(1, sizeof(anthropic_reader)); }

bool anthropic_reader_feed(void *ctx, const char *bytes, size_t n) {
  anthropic_reader *r = ctx;
  if (r->mode == UNDECIDED) {
    // JSON or SSE, by the first byte that is not white space (JS: text.trimStart().startsWith('{')).
    while (n && (*bytes == ' ' || *bytes == '\t' || *bytes == '\n' || *bytes == '\r')) bytes++, n--;
    if (!n) return true;
    r->mode = *bytes == '{' ? PLAIN : SSE;
    if (r->mode == SSE) r->sse = sse_new(MAX_EVENT, on_event, r);
  }
  if (r->mode == PLAIN) {
    if (r->plain.len + n > MAX_JSON) {
      jb_lit(&r->fault, "the provider's JSON answer is larger than 32 MiB");
      return false;
    }
    jb_raw(&r->plain, bytes, n);
    return true;
  }
  if (r->sse && sse_feed(r->sse, bytes, n)) return true;
  if (r->fault.len == 0) jb_lit(&r->fault, r->sse ? "an SSE event is larger than 8 MiB" : "out of memory");
  return false;
}

static void content_of_blocks(json_buf *out, anthropic_reader *r) {
  // By index, as the JS driver's sparse array iterated.
  for (size_t i = 1; i < r->n_blocks; i++)
    for (size_t j = i; j > 0 && r->blocks[j - 1].index > r->blocks[j].index; j--) {
      block t = r->blocks[j];
      r->blocks[j] = r->blocks[j - 1];
      r->blocks[j - 1] = t;
    }
  bool first = true;
  for (size_t i = 0; i < r->n_blocks; i++) {
    block *b = &r->blocks[i];
    if (!b->text_block && !b->tool_block) continue;
    jb_lit(out, first ? "{\"type\":" : ",{\"type\":");
    first = false;
    if (b->text_block) {
      jb_lit(out, "\"text\"");
      if (b->has_text) {
        jb_lit(out, ",\"text\":");
        jb_str(out, b->text.data ? b->text.data : "", b->text.len);
      }
    } else {
      jb_lit(out, "\"tool_call\"");
      if (b->id.len) jb_lit(out, ",\"id\":"), jb_raw(out, b->id.data, b->id.len);
      if (b->name.len) jb_lit(out, ",\"name\":"), jb_raw(out, b->name.data, b->name.len);
      jb_lit(out, ",\"input\":");
      if (b->input.len) jb_raw(out, b->input.data, b->input.len);
      else jb_lit(out, "{}");
    }
    jb_lit(out, "}");
  }
}

/* fromMessage() of a plain JSON answer. */
static bool from_message(json_buf *out, const char *text, size_t n, json_buf *why) {
  char err[160];
  json_buf fixed = {0};
  text = driver_valid_utf8(text, &n, &fixed);
  json_value *msg = json_parse(text, n, err, sizeof err);
  jb_free(&fixed);
  if (!msg) {
    jb_lit(why, err);
    return false;
  }
  jb_lit(out, "{\"stop_reason\":\"");
  jb_lit(out, stop_of(json_get(msg, "stop_reason")));
  jb_lit(out, "\",\"content\":[");
  const json_value *content = json_get(msg, "content");
  bool first = true;
  for (size_t i = 0; json_type_of(content) == JSON_ARRAY && i < json_count(content); i++) {
    const json_value *b = json_at(content, i), *type = json_get(b, "type");
    bool text = driver_is(type, "text");
    if (!text && !driver_is(type, "tool_use")) continue;
    jb_lit(out, first ? "{\"type\":" : ",{\"type\":");
    first = false;
    jb_lit(out, text ? "\"text\"" : "\"tool_call\"");
    const json_value *v;
    if (text && (v = json_get(b, "text"))) jb_lit(out, ",\"text\":"), jb_value(out, v);
    if (!text) {
      if ((v = json_get(b, "id"))) jb_lit(out, ",\"id\":"), jb_value(out, v);
      if ((v = json_get(b, "name"))) jb_lit(out, ",\"name\":"), jb_value(out, v);
      v = json_get(b, "input");
      jb_lit(out, ",\"input\":");
      if (v && json_type_of(v) != JSON_NULL) jb_value(out, v);
      else jb_lit(out, "{}");
    }
    jb_lit(out, "}");
  }
  jb_lit(out, "]");
  usage u = {0};
  usage_assign(&u, json_get(msg, "usage"));
  usage_write(out, &u);
  json_free(msg);
  return true;
}

bool anthropic_reader_finish(anthropic_reader *r, bool body_broken, json_buf *out, json_buf *why) {
  if (r->fault.len) {
    jb_raw(why, r->fault.data, r->fault.len);
    return false;
  }
  if (r->mode == PLAIN) return from_message(out, r->plain.data ? r->plain.data : "", r->plain.len, why);
  if (r->sse && !body_broken) sse_finish(r->sse);
  // A stream cut before its final event holds a partial answer: a failed call, never a completed one.
  if (!r->stopped) {
    jb_lit(why, "the provider stream ended before message_stop (connection cut mid-answer)");
    return false;
  }
  jb_lit(out, "{\"stop_reason\":\"");
  jb_lit(out, r->stop ? r->stop : "end_turn");
  jb_lit(out, "\",\"content\":[");
  content_of_blocks(out, r);
  jb_lit(out, "]");
  usage_write(out, &r->usage);
  return true;
}

void anthropic_reader_free(anthropic_reader *r) {
  if (!r) return;
  if (r->sse) sse_free(r->sse);
  for (size_t i = 0; i < r->n_blocks; i++) block_clear(&r->blocks[i]);
  free(r->blocks);
  jb_free(&r->plain);
  jb_free(&r->fault);
  free(r);
}
