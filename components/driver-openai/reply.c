/* components/driver-openai/reply.c — reads a Chat Completions answer: SSE chunks as they arrive
 * (text and reasoning deltas emitted at once, tool-call fragments joined by index, usage, the
 * finish_reason, [DONE]) or one plain JSON document; then writes the driver's answer. */
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "openai.h"
#include "utf8.h"

#define MAX_EVENT (16u << 20) /* one SSE event; a provider's chunk is a few hundred bytes */
#define MAX_PLAIN (64u << 20) /* a plain JSON answer, read whole */

static bool on_event(void *ctx, const char *event, const char *data, size_t n);

void oa_reply_init(oa_reply *r, oa_emit_fn emit) {
  memset(r, 0, sizeof *r);
  r->emit = emit;
  r->usage[0] = r->usage[1] = r->usage[2] = -1;
}

void oa_reply_free(oa_reply *r) {
  for (size_t i = 0; i < r->n_slots; i++) {
    jb_free(&r->slots[i].id);
    jb_free(&r->slots[i].name);
    jb_free(&r->slots[i].arguments);
  }
  free(r->slots);
  free(r->finish);
  sse_free(r->sse);
  jb_free(&r->raw);
  jb_free(&r->text);
  jb_free(&r->error);
}

static void fail(oa_reply *r, const char *why) {
  if (r->error.len == 0) jb_lit(&r->error, why);
}

static const char *nonempty(const json_value *v, size_t *n) {
  const char *s = json_string(v, n);
  return s && *n ? s : NULL;
}

/* The reported usage: integers >= 0 only (the JS driver's Number.isInteger(v) && v >= 0). */
static void take_usage(oa_reply *r, const json_value *u) {
  const json_value *v[3] = {json_get(u, "prompt_tokens"), json_get(u, "completion_tokens"),
                            json_get(json_get(u, "prompt_tokens_details"), "cached_tokens")};
  r->usage_seen = true;
  for (int k = 0; k < 3; k++) {
    int64_t n;
    r->usage[k] = json_int(v[k], &n) && n >= 0 ? n : -1;
  }
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static oa_slot *slot_for(oa_reply *r, int64_t index) {
  for (size_t i = 0; i < r->n_slots; i++)
    if (r->slots[i].index == index) return &r->slots[i];
  if (r->n_slots == r->cap_slots) {
    size_t cap = r->cap_slots ? r->cap_slots * 2 : 4;
    oa_slot *s = realloc(r->slots, cap * sizeof *s);
    if (!s) return NULL;
    r->slots = s;
    r->cap_slots = cap;
  }
  oa_slot *s = &r->slots[r->n_slots++];
  memset(s, 0, sizeof *s);
  s->index = index;
  return s;
}

/* One delta's tool_calls: fragments keyed by index; the id replaces, name and arguments append. */
static void take_tool_calls(oa_reply *r, const json_value *calls) {
  for (size_t i = 0; i < json_count(calls) && json_type_of(calls) == JSON_ARRAY; i++) {
    const json_value *tc = json_at(calls, i), *index = json_get(tc, "index"), *fn = json_get(tc, "function");
    int64_t at = 0; /* tc.index ?? 0 */
    if (json_type_of(index) != JSON_NULL && (!json_int(index, &at) || at < 0)) continue; /* not an array slot */
    oa_slot *s = slot_for(r, at);
    size_t n;
    const char *v;
    if (!s) { fail(r, "out of memory"); return; }
    if ((v = nonempty(json_get(tc, "id"), &n))) { s->id.len = 0; jb_raw(&s->id, v, n); }
    if ((v = nonempty(json_get(fn, "name"), &n))) jb_raw(&s->name, v, n);
    if ((v = nonempty(json_get(fn, "arguments"), &n))) jb_raw(&s->arguments, v, n);
  }
}

static void take_chunk(oa_reply *r, const json_value *ev) {
  const json_value *choices = json_get(ev, "choices"), *usage = json_get(ev, "usage");
  if (json_type_of(usage) == JSON_OBJECT) take_usage(r, usage);
  for (size_t i = 0; i < json_count(choices) && json_type_of(choices) == JSON_ARRAY; i++) {
    const json_value *ch = json_at(choices, i), *d = json_get(ch, "delta"), *fin = json_get(ch, "finish_reason");
    size_t n;
    const char *s;
    if ((s = nonempty(json_get(d, "content"), &n))) {
      jb_raw(&r->text, s, n);
      r->emit(false, s, n);
    }
    if ((s = nonempty(json_get(d, "reasoning_content"), &n))) r->emit(true, s, n);
    take_tool_calls(r, json_get(d, "tool_calls"));
    if (oa_truthy(fin)) { /* any truthy finish_reason ends the answer; a string one maps */
      r->finished = true;
      free(r->finish);
      r->finish = (s = nonempty(fin, &n)) ? dup_n(s, n) : NULL;
    }
  }
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

const char *oa_valid_utf8(const char *s, size_t *n, json_buf *tmp) {
  size_t i = 0, bad, len;
  while (i < *n && (len = utf8_len((const unsigned char *)s + i, *n - i, &bad))) i += len;
  if (i == *n) return s;
  tmp->len = 0;
  for (i = 0; i < *n;) {
    len = utf8_len((const unsigned char *)s + i, *n - i, &bad);
    if (len) jb_raw(tmp, s + i, len);
    else jb_lit(tmp, "\xEF\xBF\xBD");
    i += len ? len : bad;
  }
  *n = tmp->len;
  return tmp->data ? tmp->data : "";
}

/* One SSE event: its data is one chunk, [DONE], or an error object. */
static bool on_event(void *ctx, const char *event, const char *data, size_t n) {
  oa_reply *r = ctx;
  json_buf fixed = {0};
  (void)event;
  while (n && is_space(*data)) { data++; n--; }
  while (n && is_space(data[n - 1])) n--;
  if (n == 6 && memcmp(data, "[DONE]", 6) == 0) { r->done = true; return true; }
  data = oa_valid_utf8(data, &n, &fixed);
  json_value *ev = n ? json_parse(data, n, NULL, 0) : NULL;
  jb_free(&fixed); /* the parsed value holds its own copies */
  if (!ev) return true; /* not JSON: skipped, as the JS driver did */
  const json_value *err = json_get(ev, "error");
  if (oa_truthy(err)) {
    json_buf e = {0};
    jb_value(&e, err);
    jb_lit(&r->error, "provider stream error: ");
    http_cut(&r->error, e.data ? e.data : "", e.len);
    jb_free(&e);
    json_free(ev);
    return false; /* the answer is failed: read no further */
  }
  take_chunk(r, ev);
  json_free(ev);
  return r->error.len == 0;
}

bool oa_reply_feed(void *reply, const char *bytes, size_t n) {
  oa_reply *r = reply;
  if (r->mode == 0) {
    /* The JS driver's test: text.trimStart().startsWith('{') is a plain JSON answer. */
    size_t k = 0;
    while (k < n && is_space(bytes[k])) k++;
    jb_raw(&r->raw, bytes, k);
    if (k == n) return !r->raw.failed;
    bytes += k;
    n -= k;
    if (*bytes == '{') r->mode = 1;
    else {
      r->mode = 2;
      r->sse = sse_new(MAX_EVENT, on_event, r);
      if (!r->sse || !sse_feed(r->sse, r->raw.data ? r->raw.data : "", r->raw.len)) { fail(r, "out of memory"); return false; }
      r->raw.len = 0;
    }
  }
  if (r->mode == 1) {
    if (r->raw.len + n > MAX_PLAIN) { fail(r, "the answer is larger than 64 MiB"); return false; }
    jb_raw(&r->raw, bytes, n);
    return !r->raw.failed;
  }
  if (!sse_feed(r->sse, bytes, n)) {
    fail(r, "an SSE event larger than 16 MiB");
    return false;
  }
  return true;
}
