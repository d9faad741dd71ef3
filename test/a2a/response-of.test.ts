/** The response of a request's headers, kept only while that response is open (runtime/a2a/server/response-of.ts). */
import http from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ResponseOf } from '../../runtime/a2a/server/response-of.ts';

function response(): { headers: object; res: http.ServerResponse } {
  const req = new http.IncomingMessage(new Socket());
  return { headers: req.headers, res: new http.ServerResponse(req) };
}

describe('ResponseOf', () => {
  it('finds a tracked response by its headers until the response closes, then lets the entry go', () => {
    const r = new ResponseOf();
    const a = response();
    const b = response();
    r.track(a.headers, a.res);
    r.track(b.headers, b.res);
    expect(r.get(a.headers)).toBe(a.res);
    expect(r.get(b.headers)).toBe(b.res);
    expect(r.open).toBe(2);
    a.res.emit('close');
    expect(r.get(a.headers)).toBeUndefined();
    expect(r.get(b.headers)).toBe(b.res);
    expect(r.open).toBe(1);
    b.res.emit('close');
    expect(r.open).toBe(0);
  });

  it('counts a response tracked twice once, and an untracked one not at all', () => {
    const r = new ResponseOf();
    const a = response();
    r.track(a.headers, a.res);
    r.track(a.headers, a.res);
    expect(r.open).toBe(1);
    a.res.emit('close');
    expect(r.open).toBe(0);
    expect(r.get(response().headers)).toBeUndefined();
  });
});
