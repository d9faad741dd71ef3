/* components/c/sse.c — the incremental Server-Sent Events splitter declared in sse.h.
 * Follows the WHATWG "event stream interpretation" rules for the fields the drivers read (data,
 * event); bytes are handled one at a time so a chunk may end anywhere, even inside a \r\n. */
#include "sse.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *p;
  size_t len, cap;
} sbuf;

struct sse_parser {
  size_t max_event;
  sse_event_fn fn;
  void *ctx;
  sbuf line;  /* the line being read, without its terminator */
  sbuf data;  /* this event's data lines, each followed by '\n' (the last one dropped on dispatch) */
  sbuf event; /* this event's `event:` name */
  bool has_data;
  bool after_cr; /* the previous byte was \r: a \n now ends nothing */
  bool dead;     /* a callback stopped us or an event was too big: every later call fails */
};

/* Appends n bytes keeping a NUL after them; false when out of memory. */
static bool sb_put(sbuf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 128;
    while (nc < b->len + n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) return false;
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return true;
}

sse_parser *sse_new(size_t max_event, sse_event_fn fn, void *ctx) {
  sse_parser *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->max_event = max_event;
  p->fn = fn;
  p->ctx = ctx;
  return p;
}

static void reset_event(sse_parser *p) {
  p->data.len = 0;
  p->event.len = 0;
  p->has_data = false;
}

static bool dispatch(sse_parser *p) {
  if (!p->has_data) { reset_event(p); return true; }
  size_t n = p->data.len - 1; /* drop the '\n' after the last data line */
  p->data.p[n] = '\0';
  bool go = p->fn(p->ctx, p->event.len ? p->event.p : "", p->data.p, n);
  reset_event(p);
  return go;
}

/* One complete line: a blank line ends the event; "field: value" lines fill it. */
static bool end_line(sse_parser *p) {
  const char *s = p->line.p ? p->line.p : "";
  size_t n = p->line.len, name_len = n;
  p->line.len = 0;
  if (n == 0) return dispatch(p);
  if (s[0] == ':') return true; /* comment */
  const char *colon = memchr(s, ':', n);
  const char *value = s + n;
  if (colon) {
    name_len = (size_t)(colon - s);
    value = colon + 1;
    if (value < s + n && *value == ' ') value++;
  }
  size_t vlen = (size_t)(s + n - value);
  if (name_len == 4 && memcmp(s, "data", 4) == 0) {
    p->has_data = true;
    return sb_put(&p->data, value, vlen) && sb_put(&p->data, "\n", 1);
  }
  if (name_len == 5 && memcmp(s, "event", 5) == 0) {
    p->event.len = 0;
    return sb_put(&p->event, value, vlen);
  }
  return true; /* id, retry and unknown fields: not used by the drivers */
}

/* Adds bytes to the current line unless the event (its lines so far) would exceed max_event. */
static bool take(sse_parser *p, const char *s, size_t n) {
  if (p->line.len + n + p->data.len + p->event.len > p->max_event) return false;
  return sb_put(&p->line, s, n);
}

bool sse_feed(sse_parser *p, const char *bytes, size_t n) {
  if (!p || p->dead) return false;
  size_t start = 0; /* start of the run of line bytes not yet copied into p->line */
  for (size_t i = 0; i < n; i++) {
    char c = bytes[i];
    if (c != '\r' && c != '\n') { p->after_cr = false; continue; }
    bool skip = c == '\n' && p->after_cr; /* the \n of a \r\n */
    p->after_cr = c == '\r';
    if (!skip && (!take(p, bytes + start, i - start) || !end_line(p))) { p->dead = true; return false; }
    start = i + 1;
  }
  if (!take(p, bytes + start, n - start)) { p->dead = true; return false; }
  return true;
}

bool sse_finish(sse_parser *p) {
  if (!p || p->dead) return false;
  p->line.len = 0;
  reset_event(p);
  return true;
}

void sse_free(sse_parser *p) {
  if (!p) return;
  free(p->line.p);
  free(p->data.p);
  free(p->event.p);
  free(p);
}
