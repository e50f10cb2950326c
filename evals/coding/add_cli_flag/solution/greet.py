"""greet: print a greeting for a name."""

import argparse


def build_parser():
    parser = argparse.ArgumentParser(prog="greet", description="Print a greeting.")
    parser.add_argument("name", help="who to greet")
    parser.add_argument("--greeting", default="Hello", help="the word to greet with")
    parser.add_argument("--shout", action="store_true", help="print the greeting in upper case")
    return parser


def render(name, greeting="Hello", shout=False):
    text = f"{greeting}, {name}!"
    return text.upper() if shout else text


def main(argv=None):
    args = build_parser().parse_args(argv)
    print(render(args.name, args.greeting, args.shout))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
