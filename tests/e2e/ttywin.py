#!/usr/bin/env python3
# ttywin.py COLS CMD...: run CMD on a new pseudo-terminal COLS columns wide
# (0: a terminal that tells no size), print what it wrote (without the
# carriage returns) and exit with its status (128+sig when killed; 137 when
# it was still running 60 s later).
import fcntl, os, pty, select, signal, struct, sys, termios, time
cols = int(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if cols else 0, cols, 0, 0))
    os.execvp(sys.argv[2], sys.argv[2:])
out = b''
status = None
deadline = time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            d = b''
        if d:
            out += d
            continue
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = st
        break
if status is None:
    os.kill(pid, signal.SIGKILL)
    status = os.waitpid(pid, 0)[1]
try:
    while select.select([fd], [], [], 0.1)[0]:
        d = os.read(fd, 65536)
        if not d:
            break
        out += d
except OSError:
    pass
sys.stdout.write(out.decode(errors='replace').replace('\r', ''))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
