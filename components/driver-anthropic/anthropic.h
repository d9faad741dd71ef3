/* components/driver-anthropic/anthropic.h — the Anthropic Messages API driver's two halves. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "driver.h"
#include "json.h"

/* The Messages API request body for a driver request (request.c). */
void anthropic_request_body(json_buf *out, const json_value *req, const json_value *config);

/* The response reader (response.c): fed the 2xx body as it arrives, it tells an SSE stream from a
 * plain JSON answer by the first byte that is not white space, emits text and thinking deltas as
 * they come, and rebuilds the final message. */
typedef struct anthropic_reader anthropic_reader;
anthropic_reader *anthropic_reader_new(void);
/* The http_body_fn: false stops reading (a stream `error` event, an unreadable event, a bound hit). */
bool anthropic_reader_feed(void *reader, const char *bytes, size_t n);
/* After the body: the answer object without its closing brace into `out` (true), or the reason it
 * is unreadable into `why` (false). */
bool anthropic_reader_finish(anthropic_reader *r, bool body_broken, json_buf *out, json_buf *why);
void anthropic_reader_free(anthropic_reader *r);

/* JS's truthiness of a JSON value (null, false, 0, "" are false). */
bool anthropic_truthy(const json_value *v);
