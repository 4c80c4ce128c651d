"""Streaming zstd decoding for the tests, through libzstd itself (ctypes): Debian 12's Python
has no zstd module, and a test must see each flushed block decoded as it arrives."""
import ctypes

_lib = ctypes.CDLL("libzstd.so.1")


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


_lib.ZSTD_createDStream.restype = ctypes.c_void_p
_lib.ZSTD_freeDStream.argtypes = [ctypes.c_void_p]
_lib.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Buffer),
                                       ctypes.POINTER(_Buffer)]
_lib.ZSTD_decompressStream.restype = ctypes.c_size_t
_lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
_lib.ZSTD_getErrorName.argtypes = [ctypes.c_size_t]
_lib.ZSTD_getErrorName.restype = ctypes.c_char_p


class Decompressor:
    def __init__(self):
        self.d = _lib.ZSTD_createDStream()

    def __del__(self):
        _lib.ZSTD_freeDStream(self.d)

    def decompress(self, data):
        """Everything data lets decode now."""
        src = ctypes.create_string_buffer(data, len(data))
        inb = _Buffer(ctypes.cast(src, ctypes.c_void_p), len(data), 0)
        out = b""
        dst = ctypes.create_string_buffer(1 << 17)
        while True:
            outb = _Buffer(ctypes.cast(dst, ctypes.c_void_p), len(dst), 0)
            rc = _lib.ZSTD_decompressStream(self.d, ctypes.byref(outb), ctypes.byref(inb))
            if _lib.ZSTD_isError(rc):
                raise ValueError(_lib.ZSTD_getErrorName(rc).decode())
            out += dst.raw[:outb.pos]
            # Done when the input is taken and the output did not fill (nothing more pending).
            if inb.pos == inb.size and outb.pos < outb.size:
                return out


def decompress(data):
    return Decompressor().decompress(data)
