#!/usr/bin/python3
"""A Kerberos FTP client on MIT's GSS-API (Debian's python3-gssapi), for
server/kerberos_test.go: AUTH GSSAPI, ADAT with mutual authentication,
then MIC or ENC commands and 631/632 replies, PASV transfers in clear.

usage: krbftp.py HOST PORT USER mic|enc GET_REMOTE GET_LOCAL PUT_LOCAL PUT_REMOTE
       krbftp.py HOST PORT USER mic|enc --refused
Exits 0 when everything went as asked; prints what it did.
"""
import base64
import socket
import sys

import gssapi

host, port, user, level = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
conf = level == "enc"

sock = socket.create_connection((host, port), timeout=30)
rf = sock.makefile("rb")
ctx = None


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def reply():
    """Reads one reply; returns (code, text of its last line)."""
    while True:
        line = rf.readline()
        if not line:
            fail("connection closed")
        line = line.rstrip(b"\r\n").decode()
        if line[:3] in ("631", "632", "633"):
            if ctx is None:
                fail("protected reply before the context: " + line)
            res = ctx.unwrap(base64.b64decode(line[4:]))
            if conf and not res.encrypted:
                fail("reply not encrypted to ENC commands")
            line = res.message.decode().rstrip("\r\n")
        elif ctx is not None and line[0] not in "45":
            fail("unprotected reply after authentication: " + line)
        if len(line) >= 4 and line[3] == " ":
            return int(line[:3]), line[4:]


def cmd(line):
    if ctx is None:
        out = line
    else:
        tok = ctx.wrap((line + "\r\n").encode(), conf).message
        out = ("ENC " if conf else "MIC ") + base64.b64encode(tok).decode()
    sock.sendall((out + "\r\n").encode())
    return reply()


def expect(want, line):
    code, text = cmd(line)
    if code != want:
        fail("%s: %d %s (want %d)" % (line.split()[0], code, text, want))
    return text


def pasv():
    text = expect(227, "PASV")
    f = text[text.index("(") + 1:text.index(")")].split(",")
    return socket.create_connection((".".join(f[:4]), int(f[4]) * 256 + int(f[5])), timeout=30)


if reply()[0] != 220:
    fail("greeting")
name = gssapi.Name("ftp@" + host, gssapi.NameType.hostbased_service)
flags = [gssapi.RequirementFlag.mutual_authentication, gssapi.RequirementFlag.integrity,
         gssapi.RequirementFlag.confidentiality, gssapi.RequirementFlag.replay_detection,
         gssapi.RequirementFlag.out_of_sequence_detection]
init = gssapi.SecurityContext(name=name, usage="initiate", flags=flags,
                              mech=gssapi.MechType.kerberos)
expect(334, "AUTH GSSAPI")
text = expect(235, "ADAT " + base64.b64encode(init.step()).decode())
if not text.startswith("ADAT="):
    fail("235 without an AP-REP")
init.step(base64.b64decode(text[5:]))
if not init.complete:
    fail("context not complete after the AP-REP")
ctx = init
print("authenticated as", ctx.initiator_name, "to", ctx.target_name)

code, text = cmd("USER " + user)
if code == 331:
    code, text = cmd("PASS ")
if sys.argv[5] == "--refused":
    if code != 530:
        fail("login: %d %s (want 530)" % (code, text))
    print("refused:", code, text)
    sys.exit(0)
if code != 230:
    fail("login: %d %s" % (code, text))
expect(200, "TYPE I")

get_remote, get_local, put_local, put_remote = sys.argv[5:9]
dc = pasv()
expect(150, "RETR " + get_remote)
with open(get_local, "wb") as f:
    while True:
        b = dc.recv(65536)
        if not b:
            break
        f.write(b)
dc.close()
if reply()[0] != 226:
    fail("RETR did not complete")
dc = pasv()
expect(150, "STOR " + put_remote)
with open(put_local, "rb") as f:
    dc.sendall(f.read())
dc.close()
if reply()[0] != 226:
    fail("STOR did not complete")
code, _ = cmd("PROT P")
if code != 536:
    fail("PROT P: %d (want 536)" % code)
expect(221, "QUIT")
print("ok")
