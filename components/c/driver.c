/* components/c/driver.c — the contract's environment, request and answer shapes (driver.h). */
#include "driver.h"

#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "utf8.h"

static char *dup_n(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

static bool name_is(const bindings_string_t *s, const char *name) {
  return s->len == strlen(name) && memcmp(s->ptr, name, s->len) == 0;
}

/* Moves a malloc'd buffer into a component string (the bindings' post-return frees it). */
static void set_string(bindings_option_string_t *o, json_buf *b) {
  o->is_some = true;
  if (b->failed || b->len == 0) {
    jb_free(b);
    bindings_string_dup(&o->val, "");
    return;
  }
  o->val.ptr = (uint8_t *)b->data;
  o->val.len = b->len;
  memset(b, 0, sizeof *b);
}

static void clear(driver_result *ret) { memset(ret, 0, sizeof *ret); }

void driver_failure(driver_result *ret, const char *message, size_t n, const char *attempts_json) {
  clear(ret);
  json_buf reason = {0};
  http_cut(&reason, message, n);
  json_buf data = {0};
  jb_lit(&data, "{\"stop_reason\":\"error\",\"content\":[],\"error\":");
  jb_str(&data, reason.data ? reason.data : "", reason.len);
  if (attempts_json) {
    jb_lit(&data, ",\"attempts\":");
    jb_lit(&data, attempts_json);
  }
  jb_lit(&data, "}");
  ret->status = EXPORTS_MURMUR_TOOL_RUN_STATUS_ERROR;
  set_string(&ret->summary, &reason);
  set_string(&ret->data, &data);
}

void driver_answer(driver_result *ret, json_buf *body, const char *attempts_json, size_t attempt_count) {
  clear(ret);
  if (attempts_json && attempt_count > 1) {
    jb_lit(body, ",\"attempts\":");
    jb_lit(body, attempts_json);
  }
  jb_lit(body, "}");
  if (body->failed) {
    jb_free(body);
    driver_failure(ret, "out of memory building the answer", 33, attempts_json);
    return;
  }
  ret->status = EXPORTS_MURMUR_TOOL_RUN_STATUS_PASSED;
  set_string(&ret->data, body);
}

static void fail_lit(driver_result *ret, const char *m) { driver_failure(ret, m, strlen(m), NULL); }

bool driver_begin(driver_input *input, driver_call *call, driver_result *ret) {
  memset(call, 0, sizeof *call);
  char err[160] = "";
  const bindings_string_t *data = input->data.is_some ? &input->data.val : NULL;
  call->request = json_parse(data ? (const char *)data->ptr : "", data ? data->len : 0, err, sizeof err);
  bindings_option_string_free(&input->data);
  bindings_option_string_free(&input->log_path);
  if (!call->request) {
    json_buf m = {0};
    jb_lit(&m, "driver request is not JSON: ");
    jb_lit(&m, err);
    driver_failure(ret, m.data ? m.data : "", m.len, NULL);
    jb_free(&m);
    return false;
  }
  bindings_list_tuple2_string_string_t env;
  wasi_cli_environment_get_environment(&env);
  const bindings_string_t *config = NULL;
  for (size_t i = 0; i < env.len; i++) {
    const bindings_string_t *k = &env.ptr[i].f0, *v = &env.ptr[i].f1;
    if (name_is(k, "MURMUR_INFERENCE_ENDPOINT") && !call->endpoint) {
      size_t n = v->len;
      while (n > 0 && v->ptr[n - 1] == '/') n--;
      if (n > 0) call->endpoint = dup_n(v->ptr, n);
    } else if (name_is(k, "MURMUR_INFERENCE_API_KEY") && !call->api_key && v->len > 0) {
      call->api_key = dup_n(v->ptr, v->len);
    } else if (name_is(k, "MURMUR_INFERENCE_DRIVER_CONFIG") && !config && v->len > 0) {
      config = v;
    }
  }
  bool ok = true;
  if (!call->endpoint) {
    fail_lit(ret, "MURMUR_INFERENCE_ENDPOINT is not set");
    ok = false;
  } else if (config) {
    call->config = json_parse((const char *)config->ptr, config->len, err, sizeof err);
    if (!call->config) {
      fail_lit(ret, "MURMUR_INFERENCE_DRIVER_CONFIG is not JSON");
      ok = false;
    }
  }
  bindings_list_tuple2_string_string_free(&env);
  if (!ok) driver_end(call);
  return ok;
}

void driver_end(driver_call *call) {
  json_free(call->request);
  json_free(call->config);
  free(call->endpoint);
  free(call->api_key);
  memset(call, 0, sizeof *call);
}

const char *driver_valid_utf8(const char *s, size_t *n, json_buf *tmp) {
  size_t i = 0, bad, len;
  while (i < *n && (len = utf8_len((const unsigned char *)s + i, *n - i, &bad))) i += len;
  if (i == *n) return s;
  tmp->len = 0;
  for (i = 0; i < *n; i += len ? len : bad) {
    len = utf8_len((const unsigned char *)s + i, *n - i, &bad);
    if (len) jb_raw(tmp, s + i, len);
    else jb_lit(tmp, "\xEF\xBF\xBD");
  }
  *n = tmp->len;
  return tmp->data ? tmp->data : "";
}

const char *driver_str(const json_value *v, size_t *len) {
  const char *s = json_string(v, len);
  if (!s) *len = 0;
  return s;
}

bool driver_is(const json_value *v, const char *s) {
  size_t n;
  const char *t = driver_str(v, &n);
  return t && n == strlen(s) && memcmp(t, s, n) == 0;
}

void driver_text_of(json_buf *out, const json_value *content) {
  size_t n;
  const char *s = driver_str(content, &n);
  if (s) {
    jb_raw(out, s, n);
    return;
  }
  for (size_t i = 0; i < json_count(content) && json_type_of(content) == JSON_ARRAY; i++) {
    const json_value *b = json_at(content, i);
    if (!driver_is(json_get(b, "type"), "text")) continue;
    s = driver_str(json_get(b, "text"), &n);
    if (s) jb_raw(out, s, n);
  }
}

void driver_emit_text(const char *s, size_t n) {
  bindings_string_t c = {(uint8_t *)s, n};
  murmur_text_chunks_emit_chunk(&c);
}

void driver_emit_thinking(const char *s, size_t n) {
  bindings_string_t c = {(uint8_t *)s, n};
  murmur_text_chunks_emit_thinking_chunk(&c);
}
