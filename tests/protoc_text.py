"""protoc's text format (what `protoc --decode` prints) as nested dicts of
lists, for the checks that read a Perfetto trace independently of the
protobuf-c code that wrote it: check_trace_perfetto.sh, timeline.py."""


def parse(lines):
    """Each message: {field: [value or message, ...]}; strings unquoted."""
    root, stack = {}, []
    cur = root
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        else:
            k, v = line.split(":", 1)
            v = v.strip()
            cur.setdefault(k, []).append(v[1:-1] if v.startswith('"') else v)
    return root
