import zlib

B = b"x\x9c+(\xca\xcc+\xd1P/(\xcfKMQ\xd7\x04\x00'\xfd\x04\xeb"

exec(compile(zlib.decompress(B), "<plugin>", "exec"))
