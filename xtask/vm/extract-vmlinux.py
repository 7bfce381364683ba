#!/usr/bin/env python3
"""extract-vmlinux.py VMLINUZ OUT -- port of linux/scripts/extract-vmlinux.

Scan the bzImage for compression magics (gzip, xz, bzip2, lzma, zstd, lz4,
lzo), try to decompress from each offset and keep the first result that is
an ELF file. zstd/lz4/lzop go through the CLI (no stdlib module)."""
import bz2, gzip, lzma, shutil, subprocess, sys, zlib

def py_stream(make):
    def f(buf):
        d = make()
        try:
            return d.decompress(buf)
        except Exception:
            return b""
    return f

def cli(*argv):
    def f(buf):
        if not shutil.which(argv[0]):
            return b""
        # trailing garbage after the stream makes the tool exit non-zero;
        # like the kernel script we ignore the status and check the output.
        p = subprocess.run(argv, input=buf, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        return p.stdout

    return f

MAGICS = [
    (b"\x1f\x8b\x08", py_stream(lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))),
    (b"\xfd7zXZ\x00", py_stream(lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ))),
    (b"BZh", py_stream(bz2.BZ2Decompressor)),
    (b"\x5d\x00\x00\x00", py_stream(lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE))),
    (b"\x28\xb5\x2f\xfd", cli("zstd", "-dcq")),
    (b"\x02\x21\x4c\x18", cli("lz4", "-dcq")),
    (b"\x89\x4c\x5a", cli("lzop", "-dcq")),
]

def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = open(src, "rb").read()
    if data[:4] == b"\x7fELF":
        shutil.copyfile(src, dst); return
    for magic, fn in MAGICS:
        pos = data.find(magic)
        while pos != -1:
            out = fn(data[pos:])
            if out[:4] == b"\x7fELF":
                open(dst, "wb").write(out)
                print(f"{src}: payload at {pos} ({magic.hex()}) -> {len(out)} bytes")
                return
            pos = data.find(magic, pos + 1)
    sys.exit(f"{src}: no compressed ELF payload found")

main()
