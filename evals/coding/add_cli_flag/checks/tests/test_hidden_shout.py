import subprocess
import sys
import unittest


def run(*args):
    done = subprocess.run(
        [sys.executable, "greet.py", *args], capture_output=True, text=True, timeout=30
    )
    return done.returncode, done.stdout


class HiddenShoutTest(unittest.TestCase):
    def test_shout(self):
        self.assertEqual(run("Ada", "--shout"), (0, "HELLO, ADA!\n"))

    def test_shout_with_greeting(self):
        self.assertEqual(run("Bob", "--greeting", "Hi", "--shout"), (0, "HI, BOB!\n"))

    def test_default_unchanged(self):
        self.assertEqual(run("Ada"), (0, "Hello, Ada!\n"))

    def test_help_mentions_flag(self):
        code, out = run("--help")
        self.assertEqual(code, 0)
        self.assertIn("--shout", out)


if __name__ == "__main__":
    unittest.main()
