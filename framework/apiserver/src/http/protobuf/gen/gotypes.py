"""Reads Go struct types, with their struct tags, out of a Go executable.

Every Go program that hands a type to `reflect` (encoding/json does, and so
does client-go's scheme) carries that type's runtime descriptor: kind, size,
name, package path and, for structs, every field with its Go type and its
struct tag (`json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`).
Descriptors survive `strip`, so a released kubectl binary holds the exact
wire schema of every built-in API type it was compiled with, including what
neither generated.proto nor the OpenAPI documents say: whether a Go field is
a pointer (sent only when set) or a plain value (always sent, dropped from
JSON by `omitempty` when zero).

Layout read here (Go 1.20 to 1.24, amd64; internal/abi/type.go):

    Type        size u64, ptrBytes u64, hash u32, tflag u8, align u8,
                fieldAlign u8, kind u8, equal u64, gcData u64,
                str NameOff(i32), ptrToThis TypeOff(i32)           48 bytes
    StructType  Type, pkgPath Name(ptr), fields []StructField
    StructField name Name(ptr), typ *Type, offset u64
    PtrType / SliceType / ArrayType: Type, elem *Type
    MapType     Type, key *Type, elem *Type  (both map layouts)
    UncommonType (after the kind's own struct when tflag&1)
                pkgPath NameOff(i32), mcount u16, xcount u16, moff u32
    Name        flags u8, uvarint len, bytes, [uvarint len, tag bytes]

NameOffs are relative to the module's type section, which the Go linker puts
at the start of `.rodata` in a non-PIE executable (checked below).

Usage: python3 gotypes.py BINARY PACKAGE_PREFIX... > types.json
"""

import json
import struct
import sys

KIND_NAMES = {
    1: "bool", 2: "int", 3: "int8", 4: "int16", 5: "int32", 6: "int64",
    7: "uint", 8: "uint8", 9: "uint16", 10: "uint32", 11: "uint64",
    12: "uintptr", 13: "float32", 14: "float64", 15: "complex64",
    16: "complex128", 17: "array", 18: "chan", 19: "func", 20: "interface",
    21: "map", 22: "ptr", 23: "slice", 24: "string", 25: "struct",
    26: "unsafe.Pointer",
}
KIND_STRUCT = 25
TFLAG_UNCOMMON = 1
TFLAG_EXTRA_STAR = 2
TFLAG_NAMED = 4
TYPE_SIZE = 48
# Size of each kind's descriptor struct before its UncommonType.
# Kinds missing here (func, interface, map: their layouts vary) report no
# package path; the generator never needs one for them.
KIND_STRUCT_SIZE = {
    17: TYPE_SIZE + 24,  # array: elem, slice, len
    18: TYPE_SIZE + 16,  # chan: elem, dir
    22: TYPE_SIZE + 8,
    23: TYPE_SIZE + 8,
    25: TYPE_SIZE + 32,  # struct: pkgPath, fields slice
}
for _basic in list(range(1, 17)) + [24, 26]:
    KIND_STRUCT_SIZE[_basic] = TYPE_SIZE


class Binary:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        if self.data[:4] != b"\x7fELF" or self.data[4] != 2:
            raise SystemExit(f"{path}: not a 64-bit ELF executable")
        shoff, = struct.unpack_from("<Q", self.data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 0x3A)
        headers = []
        for i in range(shnum):
            off = shoff + i * shentsize
            name, _typ, _flags, addr, offset, size = struct.unpack_from("<IIQQQQ", self.data, off)
            headers.append((name, addr, offset, size))
        strtab_off = headers[shstrndx][2]
        self.sections = {}
        for name, addr, offset, size in headers:
            end = self.data.index(b"\0", strtab_off + name)
            self.sections[self.data[strtab_off + name:end].decode()] = (addr, offset, size)
        self.rodata_addr, self.rodata_off, self.rodata_size = self.sections[".rodata"]
        self.types_base = self.rodata_addr

    def in_rodata(self, addr):
        return self.rodata_addr <= addr < self.rodata_addr + self.rodata_size

    def off(self, addr):
        if not self.in_rodata(addr):
            raise ValueError(f"address {addr:#x} outside .rodata")
        return self.rodata_off + (addr - self.rodata_addr)

    def u64(self, addr):
        return struct.unpack_from("<Q", self.data, self.off(addr))[0]

    def i32(self, addr):
        return struct.unpack_from("<i", self.data, self.off(addr))[0]

    def u8(self, addr):
        return self.data[self.off(addr)]

    def uvarint(self, addr):
        value, shift = 0, 0
        while True:
            b = self.u8(addr)
            addr += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value, addr

    def name(self, addr):
        """Decodes a Name blob: (name, tag or None, embedded)."""
        flags = self.u8(addr)
        length, p = self.uvarint(addr + 1)
        name = self.data[self.off(p):self.off(p) + length].decode("utf-8")
        p += length
        tag = None
        if flags & 2:
            tag_len, p = self.uvarint(p)
            tag = self.data[self.off(p):self.off(p) + tag_len].decode("utf-8")
        return name, tag, bool(flags & 8)

    def type_name(self, taddr):
        tflag = self.u8(taddr + 20)
        name, _, _ = self.name(self.types_base + self.i32(taddr + 40))
        if tflag & TFLAG_EXTRA_STAR:
            name = name[1:]
        return name

    def pkg_path(self, taddr):
        tflag = self.u8(taddr + 20)
        kind = self.u8(taddr + 23) & 0x1F
        if not tflag & TFLAG_UNCOMMON:
            return None
        size = KIND_STRUCT_SIZE.get(kind)
        if size is None:
            return None
        off = self.i32(taddr + size)
        if off == 0:
            return None
        return self.name(self.types_base + off)[0]

    def plausible_struct(self, taddr):
        try:
            size, _ptrbytes = struct.unpack_from("<QQ", self.data, self.off(taddr))
            tflag, align, field_align, kind = struct.unpack_from("<BBBB", self.data, self.off(taddr + 20))
            if kind & 0x1F != KIND_STRUCT or align not in (1, 2, 4, 8) or field_align != align:
                return None
            if tflag & ~0x0F or size > 1 << 20:
                return None
            pkg, fptr, flen, fcap = struct.unpack_from("<QQQQ", self.data, self.off(taddr + 48))
            if flen != fcap or flen > 400 or (flen and not self.in_rodata(fptr)):
                return None
            if pkg and not self.in_rodata(pkg):
                return None
            fields = []
            last = 0
            for i in range(flen):
                nptr, typ, offset = struct.unpack_from("<QQQ", self.data, self.off(fptr + 24 * i))
                if not self.in_rodata(nptr) or not self.in_rodata(typ) or offset < last or offset > size:
                    return None
                last = offset
                fields.append((nptr, typ, offset))
            self.type_name(taddr)
            return fields
        except (ValueError, UnicodeDecodeError, struct.error, IndexError):
            return None


def describe(b, taddr, depth=0):
    """A JSON description of the type at taddr; named structs by reference."""
    kind = b.u8(taddr + 23) & 0x1F
    tflag = b.u8(taddr + 20)
    kname = KIND_NAMES.get(kind, f"kind{kind}")
    out = {"kind": kname}
    if tflag & TFLAG_NAMED:
        out["name"] = b.type_name(taddr)
        pkg = b.pkg_path(taddr)
        if pkg:
            out["pkg"] = pkg
    if kind in (22, 23, 17):
        out["elem"] = describe(b, b.u64(taddr + 48), depth + 1)
    elif kind == 21:
        out["key"] = describe(b, b.u64(taddr + 48), depth + 1)
        out["elem"] = describe(b, b.u64(taddr + 56), depth + 1)
    return out


def main():
    path, prefixes = sys.argv[1], sys.argv[2:]
    b = Binary(path)
    types = {}
    data = b.data
    start, end = b.rodata_off, b.rodata_off + b.rodata_size
    # Descriptors are 8-aligned; the kind byte (at +23) may carry flag bits
    # above the low five (KindDirectIface, KindGCProg).
    for toff in range(start - start % 8, end - TYPE_SIZE, 8):
        if data[toff + 23] & 0x1F != KIND_STRUCT or not data[toff + 20] & TFLAG_NAMED:
            continue
        taddr = b.rodata_addr + (toff - start)
        fields = b.plausible_struct(taddr)
        if fields is None:
            continue
        pkg = b.pkg_path(taddr)
        if not pkg or not any(pkg.startswith(p) for p in prefixes):
            continue
        name = b.type_name(taddr)
        short = name.rsplit(".", 1)[-1]
        key = f"{pkg}.{short}"
        entry = []
        for nptr, typ, offset in fields:
            fname, tag, embedded = b.name(nptr)
            entry.append({
                "name": fname,
                "tag": tag or "",
                "embedded": embedded,
                "offset": offset,
                "type": describe(b, typ),
            })
        if key in types and types[key] != entry:
            raise SystemExit(f"two different descriptors for {key}")
        types[key] = entry
    json.dump(dict(sorted(types.items())), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
