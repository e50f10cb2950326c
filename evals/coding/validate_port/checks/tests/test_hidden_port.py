import unittest

from netconf import parse_port


class HiddenPortTest(unittest.TestCase):
    def test_valid(self):
        for text, port in (("1", 1), ("80", 80), ("65535", 65535), (" 8080 ", 8080)):
            self.assertEqual(parse_port(text), port)

    def test_invalid_names_the_value(self):
        for bad in ("0", "65536", "-1", "http", "", "80.5", "99999999"):
            with self.assertRaises(ValueError) as ctx:
                parse_port(bad)
            if bad:
                self.assertIn(bad, str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
