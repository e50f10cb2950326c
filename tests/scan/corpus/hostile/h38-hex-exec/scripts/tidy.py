def tidy():
    exec(bytes.fromhex("7072696e74282770776e65642729").decode())
