/* components/c/driver.h — what every built-in inference driver shares besides the HTTP call: the
 * contract's environment, the request, the tool-result shapes it answers with, and the chunks it
 * streams to the task.
 *
 * Contract (the reference runtime's, so drivers built for it and these are interchangeable):
 *   env  MURMUR_INFERENCE_ENDPOINT (required), MURMUR_INFERENCE_API_KEY (optional),
 *        MURMUR_INFERENCE_DRIVER_CONFIG (optional JSON object of driver settings)
 *   in   tool-input.data = the driver request JSON {model, max_tokens, messages, tools, params, system, …}
 *   out  tool-result: status `passed` with data = {stop_reason, content, usage?, attempts?}, or
 *        status `error` with summary = the reason and data = {stop_reason: "error", content: [],
 *        error, attempts?}; metadata empty, never truncated. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "bindings.h"
#include "json.h"

typedef exports_murmur_tool_run_tool_input_t driver_input;
typedef exports_murmur_tool_run_tool_result_t driver_result;

typedef struct {
  json_value *request;   /* the driver request */
  char *endpoint;        /* without trailing slashes */
  char *api_key;         /* NULL when unset or empty */
  json_value *config;    /* the driver config; NULL when unset */
} driver_call;

/* Reads the request and the environment; on a fault writes the failure answer into `ret` and
 * returns false ("driver request is not JSON: …", "MURMUR_INFERENCE_ENDPOINT is not set",
 * "MURMUR_INFERENCE_DRIVER_CONFIG is not JSON"). Frees `input` either way. */
bool driver_begin(driver_input *input, driver_call *call, driver_result *ret);
void driver_end(driver_call *call);

/* The answer: status passed, data = `body` (a JSON object without its closing brace, so
 * `attempts` can be added: the attempts go back only when there was more than one). Frees body. */
void driver_answer(driver_result *ret, json_buf *body, const char *attempts_json, size_t attempt_count);

/* The failure answer: status error, summary and data.error = cut(message); data.attempts when
 * `attempts_json` is given (every attempt made, even one). */
void driver_failure(driver_result *ret, const char *message, size_t n, const char *attempts_json);

/* Text of a message's content: a string as it is, else its text blocks' text joined (textOf). */
void driver_text_of(json_buf *out, const json_value *content);

/* `s` (n bytes) as valid UTF-8: itself when it is, else a copy in `tmp` with each invalid sequence
 * replaced by U+FFFD, as the JS drivers' TextDecoder read a provider's bytes (json_parse refuses
 * invalid UTF-8, which would lose a whole event for one bad byte). Updates *n. */
const char *driver_valid_utf8(const char *s, size_t *n, json_buf *tmp);

/* A JSON string's bytes (NULL, 0 when it is not a string). */
const char *driver_str(const json_value *v, size_t *len);
/* True when v is the JSON string s. */
bool driver_is(const json_value *v, const char *s);

/* Text and thinking as they arrive, to the task's stream (murmur:text/chunks). */
void driver_emit_text(const char *s, size_t n);
void driver_emit_thinking(const char *s, size_t n);
