#!/bin/sh
# hipath serve --workshop (docs/workshop.md): tests/web/workshop.js drives
# two students and the teacher in headless chromium (playwright-core) and
# a third student through the official openai SDK, against the ASan build
# (and the scheduler's chunks, preemptions and prefix-cache hits on the
# teacher's page, under the teacher's long prompts);
# then curl for what no page sends: no key, a bad key, a bad join body,
# the teacher's key without the caps, and --workshop's printed lines.
# Without --workshop nothing changes (tests/check_web*.sh). Screenshots:
# build/check_workshop/. Skipped (77) without chromium or the npm packages.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
MODEL=models/tiny-hi
OUT=build/check_workshop
[ -x /usr/bin/chromium ] || { echo "no /usr/bin/chromium (scripts/deps-test.sh installs it): skipped"; exit 77; }
for c in node curl sqlite3 python3; do command -v $c >/dev/null || { echo "$c missing"; exit 1; }; done
[ -d build/npm-web/node_modules/playwright-core ] && [ -d build/npm-server/node_modules/openai ] ||
  { echo "no playwright-core or openai under build/npm-* (make test installs them): skipped"; exit 77; }
rm -rf $OUT && mkdir -p $OUT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
fail=0
. tests/server/serve.sh
RATE=3

# --host 127.0.0.1: a test listens on loopback only (--workshop alone listens on every interface);
# a pool of 256 tokens (16 blocks) and steps of 32 tokens: the teacher's long prompts are chunked and preempted
start ws "$MODEL" --workshop --host 127.0.0.1 --workshop-rate $RATE --workshop-max-tokens 16 --kv-cache-mb 0.25 --max-num-batched-tokens 32 \
  --trace-db $OUT/serve.db --labs-dir $OUT/labs
CODE=$(sed -n 's/.*join code \([A-Z0-9]*\) .*/\1/p' $OUT/ws.log)
TKEY=$(sed -n 's/.*teacher.s page .* http:[^#]*#key=\([0-9a-f]*\)$/\1/p' $OUT/ws.log)
U=http://127.0.0.1:$PORT
ok() { if [ "$1" = "$2" ]; then echo "ok   $3"; else echo "FAIL $3: got '$1', want '$2'"; fail=1; fi; }
ok "$(echo "$CODE" | wc -c)" 7 "a 6-character join code printed ($CODE)"
ok "$(echo "$TKEY" | wc -c)" 33 "and the teacher's URL with a 32-digit key"
grep -q "students open one of http://127.0.0.1:$PORT/join" $OUT/ws.log; ok $? 0 "and the join URL"

status() { curl -s -o $OUT/body -w '%{http_code}' "$@"; }
code_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' $OUT/body 2>/dev/null; }
HI='{"messages":[{"role":"user","content":"Hi"}],"max_tokens":32}'
ok "$(status $U/v1/chat/completions -H 'Content-Type: application/json' -d "$HI")/$(code_of)" 401/invalid_api_key "no key on /v1/"
ok "$(status $U/v1/chat/completions -H 'Authorization: Bearer 0123456789abcdef0123456789abcdef' -H 'Content-Type: application/json' -d "$HI")/$(code_of)" \
   401/invalid_api_key "a key no student has"
ok "$(status $U/api/requests)/$(code_of)" 401/invalid_api_key "no key on /api/"
ok "$(status -X POST $U/api/workshop/join -H 'Content-Type: application/json' -d '{"code":1}')/$(code_of)" 400/invalid_parameter "a join code that is no string"
ok "$(status -X POST $U/api/workshop/join -H 'Content-Type: application/json' -d "{\"code\":\"$CODE\",\"name\":\"\"}")/$(code_of)" 400/invalid_parameter "an empty name"
ok "$(status -X POST $U/api/workshop/join -H 'Content-Type: application/json' -d "{\"code\":\"$CODE\",\"name\":\"a\\u0007b\"}")/$(code_of)" 400/invalid_parameter "a name with a control character"
printf '{"code":"%s","name":"a\377b"}' "$CODE" >$OUT/badname.json
ok "$(status -X POST $U/api/workshop/join -H 'Content-Type: application/json' --data-binary @$OUT/badname.json)/$(code_of)" 400/invalid_parameter "a name that is not UTF-8"
ok "$(status -X POST $U/api/workshop/join -H 'Content-Type: application/json' -d 'nope')/$(code_of)" 400/invalid_json "a body that is not JSON"
ok "$(status $U/api/workshop/join)/$(code_of)" 405/method_not_allowed "GET on the join"
ok "$(status $U/v1/chat/completions -H "Authorization: Bearer $TKEY" -H 'Content-Type: application/json' -d "$HI")" 200 \
   "the teacher's key is not capped (max_tokens 32 > 16)"

node tests/web/workshop.js $U "$CODE" "$TKEY" $OUT build/npm-web build/npm-server $OUT/serve.db $RATE || fail=1
stop ws

# Without --workshop: /api/workshop/join is not there, the loopback default holds.
start plain "$MODEL" --trace-db $OUT/plain.db
ok "$(status -X POST http://127.0.0.1:$PORT/api/workshop/join -H 'Content-Type: application/json' -d '{"code":"AAAAAA","name":"x"}')/$(code_of)" 404/no_workshop "no workshop without --workshop"
grep -q "workshop:" $OUT/plain.log; ok $? 1 "and nothing of one printed"
stop plain
"$HIPATH" serve --model $MODEL --workshop-rate 5 >$OUT/bad.log 2>&1; ok "$? $(grep -c 'go with --workshop' $OUT/bad.log)" "1 1" "--workshop-rate without --workshop is refused"
ls $OUT/*.png 2>/dev/null | tr '\n' ' '; echo
[ $fail -eq 0 ] && echo "check_workshop: passed" || echo "check_workshop: FAILED"
exit $fail
