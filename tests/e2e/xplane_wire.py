"""The protobuf wire format for the XPlane tests and bench, no packages.

Writing: varint(n) and fld(num, wt, payload) (wire types 0 and 2).
Reading, independently of gdnctl's reader: read_varint(b, i) and fields(b),
which yields (field number, value) and raises on wire types 3, 4, 6 and 7.
Used by tests/e2e/t0304-trace-xplane.sh, t0305-xprof-compare.sh and
tests/bench/xplane.sh (through PYTHONPATH=tests/e2e).
"""


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b); return bytes(out)


def fld(num, wt, payload):
    tag = varint(num << 3 | wt)
    if wt == 0:
        return tag + varint(payload)
    if wt == 2:
        return tag + varint(len(payload)) + payload
    raise ValueError


def read_varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1
        r |= (c & 0x7f) << s; s += 7
        if not c & 0x80:
            return r, i


def fields(b):
    i = 0
    while i < len(b):
        k, i = read_varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = read_varint(b, i)
        elif w == 1:
            v = b[i:i + 8]; i += 8
        elif w == 5:
            v = b[i:i + 4]; i += 4
        elif w == 2:
            n, i = read_varint(b, i); v = b[i:i + n]; i += n
        else:
            raise ValueError("wire type %d" % w)
        yield f, v
