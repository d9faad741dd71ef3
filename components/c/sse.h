/* components/c/sse.h — an incremental Server-Sent Events splitter for the built-in drivers. */
#pragma once
#include <stddef.h>
#include <stdbool.h>
/* Feed bytes as they arrive; on each complete event (blank line) the callback gets the event's
 * `data:` lines joined with '\n' (the optional single space after "data:" removed) and its `event:`
 * name ("" if none). Lines end in \n, \r\n or \r (a \r ends its line at once; a \n right after it,
 * even in the next chunk, is skipped). As in the WHATWG EventSource rules, an event with no `data:`
 * line is not delivered. Comment lines (":...") and other fields are ignored. Returns false if the
 * callback returned false (stop) or an event exceeded max_event bytes; after that every call
 * returns false. */
typedef bool (*sse_event_fn)(void *ctx, const char *event, const char *data, size_t data_len);
typedef struct sse_parser sse_parser;
sse_parser *sse_new(size_t max_event, sse_event_fn fn, void *ctx);
bool sse_feed(sse_parser *p, const char *bytes, size_t n);
bool sse_finish(sse_parser *p);   /* end of stream: a trailing event without blank line is NOT delivered */
void sse_free(sse_parser *p);
