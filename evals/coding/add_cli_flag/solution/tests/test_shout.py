import contextlib
import io
import unittest

from greet import main


class ShoutTest(unittest.TestCase):
    def test_shout(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["Ada", "--shout"])
        self.assertEqual(out.getvalue(), "HELLO, ADA!\n")


if __name__ == "__main__":
    unittest.main()
