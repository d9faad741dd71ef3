/* components/driver-openai/openai.h — the OpenAI Chat Completions driver's two halves: the request
 * it sends (request.c) and the answer it reads, streamed or plain (reply.c). openai.c joins them
 * to the shared HTTP call and the driver contract (components/c/). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "sse.h"

/* <endpoint>/chat/completions when the endpoint ends in a version segment such as /v1, else
 * <endpoint>/v1/chat/completions (the reference runtime's rule: https://api.openai.com and
 * https://api.openai.com/v1 both work). `endpoint` has no trailing slash. */
void oa_url(json_buf *out, const char *endpoint);

/* The Chat Completions request for a driver request `req` and the driver config (may be NULL). */
void oa_body(json_buf *out, const json_value *req, const json_value *config);

/* JS truthiness of a JSON value (null, false, 0 and "" are falsy): the JS driver's `if (x)`. */
bool oa_truthy(const json_value *v);

/* Text (thinking false) or reasoning (thinking true) as it arrives. */
typedef void (*oa_emit_fn)(bool thinking, const char *s, size_t n);

typedef struct {
  int64_t index; /* the stream's tool_calls[].index */
  json_buf id, name, arguments;
} oa_slot;

typedef struct {
  oa_emit_fn emit;
  int mode;          /* 0: not known yet (only whitespace so far), 1: one JSON document, 2: SSE */
  json_buf raw;      /* mode 0: the whitespace so far; mode 1: the whole body */
  sse_parser *sse;   /* mode 2 */
  json_buf text;     /* the content deltas joined */
  oa_slot *slots;
  size_t n_slots, cap_slots;
  bool done;         /* data: [DONE] seen */
  bool finished;     /* a finish_reason seen */
  char *finish;      /* that finish_reason when it was a string */
  bool usage_seen;
  int64_t usage[3];  /* prompt, completion, cached; -1 when not reported */
  json_buf error;    /* why the answer is unreadable (empty when it is readable) */
} oa_reply;

/* s[0..*n) with each invalid UTF-8 sequence replaced by U+FFFD, as fetch's text() decoded the body
 * for the JS driver: s itself when it is valid, else tmp's bytes (*n updated). */
const char *oa_valid_utf8(const char *s, size_t *n, json_buf *tmp);

void oa_reply_init(oa_reply *r, oa_emit_fn emit);
/* The response body as it arrives (an http_body_fn); false stops reading (an error event). */
bool oa_reply_feed(void *reply, const char *bytes, size_t n);
/* After the body: true with `body` = the answer object without its closing brace
 * ({"stop_reason":…,"content":[…],"usage":{…}?), or false with `error` = why it is unreadable. */
bool oa_reply_finish(oa_reply *r, json_buf *body, json_buf *error);
void oa_reply_free(oa_reply *r);
