#!/usr/bin/env python3
"""A load balancer's choices made visible (tests/check_dp.sh).

usage: dp_lb.py URL
A long streaming request A is sent first and read up to its first token (it
is then running on some replica); then B, C and D, short and unstreamed, one
after another, each sent when the one before has finished; then A's
connection is closed (the server cancels it). Prints a JSON object: each
request's prompt and completion tokens, in the order they were sent."""
import http.client, json, sys, urllib.parse


def post(u, body):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    return c, c.getresponse()


def main():
    u = urllib.parse.urlparse(sys.argv[1])
    long_c, r = post(u, {"prompt": "a long one", "max_tokens": 3000, "ignore_eos": True, "stream": True})
    while not r.readline().startswith(b"data: {"):   # its first token: it is running
        pass
    out = []
    for words in (20, 40, 60):
        c, r = post(u, {"prompt": " ".join(f"w{words}x{k}" for k in range(words)), "max_tokens": 4, "ignore_eos": True})
        j = json.loads(r.read())
        c.close()
        out.append(j["usage"])
    long_c.close()
    print(json.dumps(out))


main()
