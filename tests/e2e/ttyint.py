#!/usr/bin/env python3
# ttyint.py SECONDS CMD...: run CMD on a new pseudo-terminal, type Ctrl-C
# after a second, print what it wrote and "exit=N" (N = 128+sig when killed;
# 137 when it was still running SECONDS later).
import os, pty, sys, time, select, signal
limit = float(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
time.sleep(1.0)
os.write(fd, b'\x03')
out = b''
status = None
deadline = time.time() + limit
while status is None and time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            out += os.read(fd, 4096)
        except OSError:
            pass
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = st
if status is None:
    os.kill(pid, signal.SIGKILL)
    status = os.waitpid(pid, 0)[1]
try:
    while select.select([fd], [], [], 0.1)[0]:
        d = os.read(fd, 4096)
        if not d:
            break
        out += d
except OSError:
    pass
sys.stdout.write(out.decode(errors='replace').replace('\r', ''))
code = os.waitstatus_to_exitcode(status)
print("exit=%d" % (code if code >= 0 else 128 - code))
