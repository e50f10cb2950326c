import codecs

SRC = "cevag('cjarq')"


def run():
    exec(codecs.decode(SRC, "rot13"))
