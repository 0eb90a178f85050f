#!/usr/bin/env python3
"""tarhack.py — makes damaged and hostile bundles for tests/bundle/*.sh.

  tarhack.py flip TAR MEMBER          flip one byte in MEMBER's data, in place
                                      (uncompressed tar; header untouched)
  tarhack.py hostile KIND IN.tar OUT  copy IN.tar's members into OUT, adding
                                      or changing one the way KIND says
KINDs: traversal absolute symlink hardlink device fifo dir duplicate unlisted
missing notfirst.
"""
import io
import sys
import tarfile


def flip(path, member):
    with tarfile.open(path, "r:") as t:
        m = t.getmember(member)
        off, size = m.offset_data, m.size
    with open(path, "r+b") as f:
        f.seek(off + size // 2)
        b = f.read(1)
        f.seek(off + size // 2)
        f.write(bytes([b[0] ^ 0x01]))


def hostile(kind, src, out):
    with tarfile.open(src, "r:") as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
    w = tarfile.open(out, "w:", format=tarfile.PAX_FORMAT)

    def add(name, data=b"x", type_=tarfile.REGTYPE, link=""):
        ti = tarfile.TarInfo(name)
        ti.type = type_
        ti.linkname = link
        ti.size = len(data) if type_ == tarfile.REGTYPE else 0
        w.addfile(ti, io.BytesIO(data) if type_ == tarfile.REGTYPE else None)

    if kind == "notfirst":
        members = members[1:] + members[:1]
    if kind == "missing":
        members = members[:-1]
    for i, (m, data) in enumerate(members):
        w.addfile(m, io.BytesIO(data))
        if i == 0:
            if kind == "traversal":
                add("jobs/../../evil")
            elif kind == "absolute":
                add("/tmp/latentq-evil")
            elif kind == "symlink":
                add("jobs/1/link", type_=tarfile.SYMTYPE, link="/etc/passwd")
            elif kind == "hardlink":
                add("jobs/1/hard", type_=tarfile.LNKTYPE, link="bundle.json")
            elif kind == "device":
                add("jobs/1/dev", type_=tarfile.CHRTYPE)
            elif kind == "fifo":
                add("jobs/1/fifo", type_=tarfile.FIFOTYPE)
            elif kind == "dir":
                add("jobs/1/dir", type_=tarfile.DIRTYPE)
            elif kind == "unlisted":
                add("jobs/1/extra.bin", b"not in bundle.json")
    if kind == "duplicate":
        m, data = members[-1]
        w.addfile(m, io.BytesIO(data))
    w.close()


if __name__ == "__main__":
    if sys.argv[1] == "flip":
        flip(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "hostile":
        hostile(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
